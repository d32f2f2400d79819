package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
)

// adminFlags declares --admin-socket and --audit-log, shared by the server
// and the users/sessions commands.
func adminFlags(fs *pflag.FlagSet, socket, auditLog *string) {
	fs.StringVar(socket, "admin-socket", "", "Unix socket of the admin API, mode 0600 (default gatehouse.sock beside a bbolt --db, none for a postgres:// one); empty disables")
	fs.StringVar(auditLog, "audit-log", "", "file (or - for stderr) receiving audit events, one JSON object a line")
}

// checkAdminFlags fills the default socket path (beside a bbolt --db, none
// for a postgres:// one) and checks both flags.
func checkAdminFlags(fs *pflag.FlagSet, db string, socket *string, auditLog string) error {
	if !fs.Changed("admin-socket") {
		*socket = defaultAdminSocket(db)
	}
	if *socket != "" {
		// A Linux abstract name has no file, so no mode: anyone could connect.
		if (*socket)[0] == '@' || strings.ContainsRune(*socket, 0) {
			return flagError("admin-socket", "%q is not a file path (an abstract socket has no permissions)", *socket)
		}
		// sun_path holds 108 bytes with its terminating NUL on Linux.
		if len(*socket) > 107 {
			return flagError("admin-socket", "%q is longer than a Unix socket path may be (107 bytes)", *socket)
		}
	}
	if strings.ContainsAny(auditLog, "\x00") {
		return flagError("audit-log", "%q is not a file name", auditLog)
	}
	return nil
}

// defaultAdminSocket is gatehouse.sock beside the bbolt file.
func defaultAdminSocket(db string) string {
	if strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://") {
		return ""
	}
	return filepath.Join(filepath.Dir(db), "gatehouse.sock")
}

// listenAdminSocket opens the admin socket with mode 0600 (AD1). A socket
// file left by a crashed server is replaced; anything else at the path (a
// regular file, a socket a live process answers on) is an error, never
// deleted. The file is created under umask 0077, so it is never reachable
// by other users, not even between creation and chmod to 0600. (The umask
// is the process's: a file another goroutine creates in that instant is
// only made private to the same user, never unusable.) Close removes it.
// Connections are served only to the server's user and root (peerListener).
func listenAdminSocket(path string) (net.Listener, error) {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("--admin-socket: %s exists and is not a socket; not replacing it", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("--admin-socket: %s is in use by a running process", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("--admin-socket: remove stale socket: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("--admin-socket: %w", err)
	}
	old := syscall.Umask(0o077)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("--admin-socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("--admin-socket: %w", err)
	}
	return newPeerListener(ln), nil
}

// openAuditLog opens the --audit-log destination: nil when empty, stderr
// for "-", otherwise the file, appended to, created with mode 0600. The
// returned closer is nil-safe to call.
func openAuditLog(path string, stderr io.Writer, now func() time.Time, onError func(error)) (*audit.Log, func() error, error) {
	switch path {
	case "":
		return nil, func() error { return nil }, nil
	case "-":
		return audit.New(stderr, now, onError), func() error { return nil }, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("--audit-log: %w", err)
	}
	return audit.New(f, now, onError), f.Close, nil
}
