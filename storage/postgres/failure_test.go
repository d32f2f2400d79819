package postgres_test

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// PostgreSQL's own codes for a full disk, a read-only standby, an I/O error
// and a server going away sort as a file store's errors do.
func TestFailureClassOfServerErrors(t *testing.T) {
	for code, want := range map[string]string{
		"53100": storage.FailureDiskFull,    // disk_full
		"25006": storage.FailureReadOnly,    // read_only_sql_transaction
		"58030": storage.FailureIO,          // io_error
		"08006": storage.FailureUnavailable, // connection_failure
		"57P01": storage.FailureUnavailable, // admin_shutdown
		"57P03": storage.FailureUnavailable, // cannot_connect_now
		"23505": storage.FailureOther,       // unique_violation
	} {
		err := fmt.Errorf("storage/postgres: add user: %w", &pgconn.PgError{Code: code, Message: "x"})
		if got := storage.FailureClass(err); got != want {
			t.Errorf("SQLSTATE %s: %s, want %s", code, got, want)
		}
	}
}
