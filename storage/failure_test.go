package storage_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// A file store's errors are sorted by the operating system's error under
// the backend's wrapping; a database's connection failures are unavailable.
func TestFailureClassOfFileAndNetworkErrors(t *testing.T) {
	pathErr := func(errno syscall.Errno) error {
		return fmt.Errorf("storage/bolt: commit: %w", &os.PathError{Op: "write", Path: "/data/gatehouse.db", Err: errno})
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{pathErr(syscall.ENOSPC), storage.FailureDiskFull},
		{pathErr(syscall.EDQUOT), storage.FailureDiskFull},
		{pathErr(syscall.EFBIG), storage.FailureDiskFull},
		{pathErr(syscall.EROFS), storage.FailureReadOnly},
		{pathErr(syscall.EACCES), storage.FailureReadOnly},
		{pathErr(syscall.EIO), storage.FailureIO},
		{fmt.Errorf("storage/postgres: user: %w", &net.OpError{Op: "dial", Net: "unix", Err: syscall.ECONNREFUSED}), storage.FailureUnavailable},
		{fmt.Errorf("storage/postgres: user: %w", context.DeadlineExceeded), storage.FailureUnavailable},
		{fmt.Errorf("storage/bolt: %w", storage.ErrNotFound), storage.FailureOther},
		{errors.New("something else"), storage.FailureOther},
	} {
		if got := storage.FailureClass(tc.err); got != tc.want {
			t.Errorf("FailureClass(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}
