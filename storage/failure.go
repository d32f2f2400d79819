package storage

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
)

// Failure classes: what went wrong with the store, in the terms an operator
// acts on (free disk space, fix permissions, start the database), without
// the internals (paths, SQL, addresses) that the server log keeps.
const (
	FailureDiskFull    = "disk_full"   // no space left on the device, or a quota
	FailureReadOnly    = "read_only"   // read-only file system or database, or no permission to write
	FailureIO          = "io_error"    // the device failed a read or a write
	FailureUnavailable = "unavailable" // the database does not answer, or the connection broke
	FailureOther       = "other"
)

// FailureClass sorts an error a backend returned into a failure class:
// the operating system's errors of a file store, and a database server's
// SQLSTATE codes and connection failures.
func FailureClass(err error) string {
	var sqlState interface{ SQLState() string } // a PostgreSQL error (pgconn.PgError)
	state := ""
	if errors.As(err, &sqlState) {
		state = sqlState.SQLState()
	}
	var netErr net.Error
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT), errors.Is(err, syscall.EFBIG),
		state == "53100": // disk_full
		return FailureDiskFull
	case errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM),
		state == "25006": // read_only_sql_transaction: a standby
		return FailureReadOnly
	case errors.Is(err, syscall.EIO), strings.HasPrefix(state, "58"): // system error, io_error
		return FailureIO
	case strings.HasPrefix(state, "08"), // connection exception
		state == "57P01", state == "57P02", state == "57P03", // shutting down, crashed, starting
		errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr):
		return FailureUnavailable
	}
	return FailureOther
}
