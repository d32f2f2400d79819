package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// AD1 at start: whatever is at the --admin-socket path that is not a stale
// socket stops the start and is left as it was: a symlink (to a file, to a
// live socket, dangling), a directory, a socket a live process answers on
// (a second server). A fresh socket is 0600 even under a lax umask.
func TestListenAdminSocketRefusesWhatItMustNotReplace(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(dir, "live.sock")
	ln, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	cases := []struct {
		name, want string
		make       func(path string) error
	}{
		{"symlink to a file", "not a socket", func(p string) error { return os.Symlink(target, p) }},
		{"symlink to a live socket", "not a socket", func(p string) error { return os.Symlink(live, p) }},
		{"dangling symlink", "not a socket", func(p string) error { return os.Symlink(filepath.Join(dir, "nothing"), p) }},
		{"directory", "not a socket", func(p string) error { return os.Mkdir(p, 0o700) }},
		{"live socket", "in use", func(p string) error { return os.Link(live, p) }},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "s"+string(rune('a'+i))+".sock")
			if err := c.make(path); err != nil {
				t.Fatal(err)
			}
			before, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			l, err := listenAdminSocket(path)
			if err == nil {
				l.Close()
				t.Fatalf("listenAdminSocket over a %s succeeded", c.name)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want it to say %q", err, c.want)
			}
			after, err := os.Lstat(path)
			if err != nil || !os.SameFile(before, after) {
				t.Errorf("the %s at the path was removed or replaced (%v)", c.name, err)
			}
		})
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Error("the symlink's target was changed")
	}
}

// AD1 from the CLI: a socket at --admin-socket that others may connect to
// (or that another user planted) gets no password and is not mistaken for
// "no server": the command fails naming it, and the database is left alone.
func TestUsersCommandRefusesAnUntrustedSocket(t *testing.T) {
	dir := t.TempDir()
	db, sock := filepath.Join(dir, "g.db"), filepath.Join(dir, "planted.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		n, _ := c.Read(buf)
		got <- buf[:n]
	}()
	code, _, errOut := cli(t, testPassword+"\n", "users", "add", "a@example.com", "--password-stdin", "--db", db, "--admin-socket", sock)
	if code == 0 || !strings.Contains(errOut, "not private") {
		t.Fatalf("users add through a 0666 socket: exit %d, %q", code, errOut)
	}
	select {
	case b := <-got:
		if strings.Contains(string(b), testPassword) {
			t.Fatal("the password was sent to the planted socket")
		}
	default:
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatal("the command fell back to the database file")
	}
}

// A Linux abstract socket ("@name") has no file and so no mode: anyone on
// the host could connect. It is refused at start.
func TestListenAdminSocketRefusesAnAbstractName(t *testing.T) {
	name := "@gatehouse-test-" + filepath.Base(t.TempDir())
	if l, err := listenAdminSocket(name); err == nil {
		l.Close()
		t.Fatalf("listenAdminSocket(%q) succeeded", name)
	}
	// Nothing is left listening under the name.
	if c, err := net.Dial("unix", name); err == nil {
		c.Close()
		t.Fatalf("%s still answers", name)
	}
}

func TestAbstractAdminSocketFlagStopsStart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	var out, errOut bytes.Buffer
	code := run([]string{"--upstream", "http://127.0.0.1:3000", "--db", db, "--admin-socket", "@gatehouse"}, strings.NewReader(""), &out, &errOut, envOf(nil))
	if code != 2 || !strings.Contains(errOut.String(), "admin-socket") {
		t.Fatalf("exit %d, stderr %q; want 2 naming --admin-socket", code, errOut.String())
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("the database was created: %v", err)
	}
}
