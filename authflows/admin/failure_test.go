package admin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// failingStore is the fixture's store whose user writes fail with err, as
// the backend returns it.
type failingStore struct {
	Store
	err error
}

func (s failingStore) CreateUser(context.Context, storage.User) error { return s.err }

// An admin command the store fails says what failed (the disk is full, the
// database is unavailable) through the socket, so the operator knows what
// to fix; never how (the file path, the address, the backend's words),
// which the server log keeps.
func TestAdminStoreFailureSaysWhatFailed(t *testing.T) {
	const path = "/var/lib/gatehouse/gatehouse.db"
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"disk full", fmt.Errorf("storage/bolt: create user: %w", &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}),
			"no space left on device"},
		{"quota", fmt.Errorf("storage/bolt: create user: %w", &os.PathError{Op: "write", Path: path, Err: syscall.EDQUOT}),
			"no space left on device"},
		{"read-only", fmt.Errorf("storage/bolt: create user: %w", &os.PathError{Op: "write", Path: path, Err: syscall.EROFS}),
			"read-only"},
		{"database unavailable", fmt.Errorf("storage/postgres: create user: failed to connect to `user=gh database=gh`: %w",
			&net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 5432}, Err: syscall.ECONNREFUSED}),
			"the database is unavailable"},
		{"anything else", errors.New("storage/bolt: create user: page 7 already freed"), "internal error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.svc.Store = failingStore{Store: f.store, err: tc.err}
			_, err := viaSocket(t, f.svc).AddUser(t.Context(), AddUserRequest{Email: "ann@example.com", Invite: true})
			if err == nil {
				t.Fatal("AddUser succeeded on a failing store")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "see the server log") {
				t.Errorf("answer %q, want it to say %q and point to the server log", msg, tc.want)
			}
			for _, internal := range []string{path, "10.0.0.5", "storage/", "user=gh", "page 7"} {
				if strings.Contains(msg, internal) {
					t.Errorf("answer %q shows %q", msg, internal)
				}
			}
		})
	}
}
