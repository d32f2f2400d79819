package admin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ErrUntrustedSocket: something answers on the socket path, but the socket
// is not private to the caller (AD1). The CLI would send it passwords, so
// it neither speaks to it nor takes it for "no server".
var ErrUntrustedSocket = errors.New("admin: the socket is not private to this user")

// checkSocket accepts the socket at path when it is a socket that only its
// owner may connect to (no group or other permission bits) and that owner
// is the caller (euid), or the caller is root. The path is followed: the
// socket reached is what counts.
func checkSocket(path string, euid int) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUntrustedSocket, err)
	}
	if st.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%w: %s is not a socket", ErrUntrustedSocket, path)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%w: %s has mode %o, want 0600", ErrUntrustedSocket, path, perm)
	}
	if owner := fileOwner(st); owner != euid && euid != 0 {
		return fmt.Errorf("%w: %s belongs to uid %d, not to uid %d", ErrUntrustedSocket, path, owner, euid)
	}
	return nil
}

// fileOwner is the uid owning the file, -1 when the system does not say.
func fileOwner(st fs.FileInfo) int {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(sys.Uid)
	}
	return -1
}
