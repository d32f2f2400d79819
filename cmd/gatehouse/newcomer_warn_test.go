package main

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
)

// startLogs builds the server for args (nothing is bound: the listeners
// are opened by serve, not newServer) and returns what it logged.
func startLogs(t *testing.T, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	all := append([]string{"--upstream", "http://127.0.0.1:3000", "--db", filepath.Join(dir, "g.db"),
		"--mail-dir", filepath.Join(dir, "mail"), "--admin-listen", "", "--admin-socket", ""}, args...)
	cfg, err := parseServe(all, envOf(nil), io.Discard)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	cfg.Argon2Memory, cfg.Argon2Time = 64, 1
	logs := &syncBuffer{}
	cfg.LogOutput = logs
	srv, err := newServer(context.Background(), cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	srv.close()
	return logs.String()
}

// `gatehouse --upstream URL` with the defaults listens on every interface
// (--listen :8080) and takes http://localhost:8080 as its base URL. A
// newcomer trying it on a VM or a server opens http://SERVER:8080/ from
// their laptop and is redirected to http://localhost:8080/auth/login, their
// own machine: "connection refused", and nothing in Gatehouse's log says
// why. When --base-url is the localhost default and --listen is not
// loopback, the start should say that browsers from other hosts will be
// sent to localhost and that --base-url must be the address users open.
func TestStartWarnsWhenTheDefaultBaseURLIsLocalhostButListenIsNot(t *testing.T) {
	logs := startLogs(t, "--listen", ":18080")
	if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "--base-url") {
		t.Errorf("--listen :18080 without --base-url (base URL http://localhost:18080) starts without a warning:\n%s", logs)
	}
	// Loopback needs no warning: that is make run.
	if logs := startLogs(t, "--listen", "127.0.0.1:18080"); strings.Contains(logs, "level=WARN") {
		t.Errorf("--listen 127.0.0.1:18080 warns:\n%s", logs)
	}
}

// --cookie-secure with an http:// --base-url on a host that is not
// localhost: browsers refuse a Secure cookie set over plain http (Chrome
// and Firefox "strict secure cookies"), so the sign-in answers 303 to the
// app and the browser is back on the sign-in page with no error, in a loop.
// The start gives no hint. It should be refused like --cookie-name __Host-x
// without Secure cookies is, or at least warned about.
func TestCookieSecureWithPlainHTTPBaseURLIsNotSilent(t *testing.T) {
	args := []string{"--listen", "127.0.0.1:18080", "--base-url", "http://gate.test:18080", "--cookie-secure"}
	all := append([]string{"--upstream", "http://127.0.0.1:3000"}, args...)
	if _, err := parseServe(all, envOf(nil), io.Discard); err != nil {
		return // refused: fine, if it says why
	}
	if logs := startLogs(t, args...); !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "cookie-secure") {
		t.Errorf("%q starts without a word about Secure cookies over http://:\n%s", args, logs)
	}
}
