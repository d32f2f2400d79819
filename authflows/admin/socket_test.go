package admin

import (
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// servePlanted listens on a socket with the given mode, as someone else's
// server (or a process planted at the path) would, and answers every
// request with 200, recording whether one arrived.
func servePlanted(t *testing.T, mode os.FileMode) (string, *bool) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "planted.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sock, mode); err != nil {
		t.Fatal(err)
	}
	reached := new(bool)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*reached = true
		_, _ = w.Write([]byte("{}"))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return sock, reached
}

// AD1, from the client's side: the CLI sends passwords over the socket
// (users add --password-stdin, users set-password), so it talks only to a
// socket that is private to its owner, and that owner is the caller (or the
// caller is root). A socket others may connect to, or one planted by another
// user, is refused with ErrUntrustedSocket, never spoken to and never taken
// for "no server".
func TestDialRefusesAnUntrustedSocket(t *testing.T) {
	for _, mode := range []os.FileMode{0o666, 0o660, 0o606, 0o777} {
		sock, reached := servePlanted(t, mode)
		c, err := Dial(t.Context(), sock)
		if err == nil {
			_, _ = c.SetPassword(t.Context(), "ann@example.com", "Sekrit-Pa55-word")
			c.Close()
			t.Fatalf("Dial of a socket with mode %o succeeded (request reached it: %t)", mode, *reached)
		}
		if !errors.Is(err, ErrUntrustedSocket) || errors.Is(err, ErrNoServer) {
			t.Errorf("Dial of a socket with mode %o = %v, want ErrUntrustedSocket only", mode, err)
		}
	}
	sock, _ := servePlanted(t, 0o600)
	c, err := Dial(t.Context(), sock)
	if err != nil {
		t.Fatalf("Dial of the caller's own 0600 socket: %v", err)
	}
	c.Close()
}

// The owner rule: the caller's own socket, or any owner when the caller is
// root (an operator administering the server's user); another user's
// socket is refused.
func TestSocketOwnerRule(t *testing.T) {
	sock, _ := servePlanted(t, 0o600)
	if err := checkSocket(sock, os.Geteuid()); err != nil {
		t.Fatalf("own socket refused: %v", err)
	}
	st, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	owner := fileOwner(st)
	if err := checkSocket(sock, owner+1); !errors.Is(err, ErrUntrustedSocket) {
		t.Errorf("socket of uid %d, caller uid %d: %v, want ErrUntrustedSocket", owner, owner+1, err)
	}
	if owner != 0 {
		if err := checkSocket(sock, 0); err != nil {
			t.Errorf("root caller refused a socket of uid %d: %v", owner, err)
		}
	}
	if err := checkSocket(sock, 0); err != nil && owner == 0 {
		t.Errorf("root caller refused its own socket: %v", err)
	}
}
