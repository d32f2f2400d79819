package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A GATEHOUSE_* variable that is set counts even when empty, like a flag
// given an empty value: GATEHOUSE_ADMIN_LISTEN= turns the admin listener off.
func TestEmptyEnvironmentValueCounts(t *testing.T) {
	up := []string{"--upstream", "http://127.0.0.1:3000"}
	c, err := parseServe(up, envOf(map[string]string{"GATEHOUSE_ADMIN_LISTEN": "", "GATEHOUSE_SMTP_FROM": ""}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.AdminListen != "" {
		t.Errorf("GATEHOUSE_ADMIN_LISTEN= left --admin-listen at %q, want it empty (disabled)", c.AdminListen)
	}
	c, err = parseServe(up, envOf(nil), io.Discard)
	if err != nil || c.AdminListen != "127.0.0.1:9090" {
		t.Fatalf("without the variable: --admin-listen %q, %v; want the default", c.AdminListen, err)
	}
	c, err = parseServe(up, envOf(map[string]string{"GATEHOUSE_PUBLIC_PATH": ""}), io.Discard)
	if err != nil || len(c.PublicPaths) != 0 {
		t.Errorf("GATEHOUSE_PUBLIC_PATH= gives %q, %v; want no public path", c.PublicPaths, err)
	}
	// An empty value where a value is needed is refused, naming the flag.
	_, err = parseServe(up, envOf(map[string]string{"GATEHOUSE_SESSION_TTL": ""}), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--session-ttl") || !strings.Contains(err.Error(), "GATEHOUSE_SESSION_TTL") {
		t.Errorf("GATEHOUSE_SESSION_TTL= : %v, want an error naming the flag and the variable", err)
	}
}

// The process environment is read with its empty values.
func TestOSEnvironKeepsEmptyValues(t *testing.T) {
	t.Setenv("GATEHOUSE_ADMIN_LISTEN", "")
	if v, ok := osEnviron().lookup("GATEHOUSE_ADMIN_LISTEN"); !ok || v != "" {
		t.Fatalf("lookup(GATEHOUSE_ADMIN_LISTEN) = %q, %t; want \"\", true", v, ok)
	}
	if _, ok := osEnviron().lookup("GATEHOUSE_NOT_SET_ANYWHERE"); ok {
		t.Fatal("an unset variable was found")
	}
}

// A GATEHOUSE_* variable that names no flag is a start error naming it,
// with the closest real name; subcommands accept the server's variables (an
// environment file shared by both), not typos.
func TestUnknownEnvironmentVariable(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "g.db")
	tests := []struct {
		args []string
		env  map[string]string
		code int
		want string // the whole of stderr, "" for success
	}{
		{[]string{"--upstream", "http://127.0.0.1:3000", "--db", db}, map[string]string{"GATEHOUSE_LISTN": ":8081"}, 2,
			"gatehouse: unknown environment variable GATEHOUSE_LISTN (did you mean GATEHOUSE_LISTEN?): it sets no flag; see gatehouse --help\n"},
		{[]string{"--upstream", "http://127.0.0.1:3000", "--db", db}, map[string]string{"GATEHOUSE_FROBNICATE": "1"}, 2,
			"gatehouse: unknown environment variable GATEHOUSE_FROBNICATE: it sets no flag; see gatehouse --help\n"},
		{[]string{"users", "list", "--db", db}, map[string]string{"GATEHOUSE_DBB": db}, 2,
			"gatehouse users: unknown environment variable GATEHOUSE_DBB (did you mean GATEHOUSE_DB?): it sets no flag; see gatehouse --help\n"},
		// The server's variables are accepted; GATEHOUSE_DB is used (a
		// missing file is named, and not created).
		{[]string{"users", "list"}, map[string]string{"GATEHOUSE_DB": db, "GATEHOUSE_UPSTREAM": "http://127.0.0.1:3000", "GATEHOUSE_LISTEN": ""}, 1,
			"gatehouse users list: database " + db + " does not exist (no server answers on " + filepath.Join(dir, "gatehouse.sock") + " either)\n"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		code := run(tt.args, strings.NewReader(""), &out, &errOut, envOf(tt.env))
		if code != tt.code || errOut.String() != tt.want {
			t.Errorf("%q with %v: exit %d, stderr %q; want %d, %q", tt.args, tt.env, code, errOut.String(), tt.code, tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "g.db")); !os.IsNotExist(err) {
		t.Errorf("users list created the database: %v", err)
	}
}

// Without --base-url, the base URL is http://localhost on the port of
// --listen; where that cannot be right, --base-url is asked for.
func TestDefaultBaseURLFollowsListen(t *testing.T) {
	up := []string{"--upstream", "http://127.0.0.1:3000"}
	tests := []struct {
		args    []string
		want    string
		errFlag string
	}{
		{nil, "http://localhost:8080", ""},
		{[]string{"--listen", ":9000"}, "http://localhost:9000", ""},
		{[]string{"--listen", "127.0.0.1:8081"}, "http://localhost:8081", ""},
		{[]string{"--listen", "[::1]:8082"}, "http://localhost:8082", ""},
		{[]string{"--listen", ":80"}, "http://localhost", ""},
		{[]string{"--listen", ":9000", "--base-url", "https://app.example.com"}, "https://app.example.com", ""},
		{[]string{"--listen", ":8443", "--tls-domain", "app.example.com"}, "https://app.example.com", ""},
		{[]string{"--listen", "127.0.0.1:0"}, "", "--base-url"},
		{[]string{"--listen", ":9000", "--tls-cert", "c.pem", "--tls-key", "k.pem"}, "", "--base-url"},
	}
	for _, tt := range tests {
		c, err := parseServe(append(up, tt.args...), envOf(nil), io.Discard)
		if tt.errFlag != "" {
			if err == nil || !strings.Contains(err.Error(), tt.errFlag) || exitCode(err) != exitUsage {
				t.Errorf("%q: %v, want a usage error naming %s", tt.args, err, tt.errFlag)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if c.BaseURL.String() != tt.want {
			t.Errorf("%q: base URL %s, want %s", tt.args, c.BaseURL, tt.want)
		}
	}
	// Everything built on the base URL follows: here the OAuth callback.
	c, err := parseServe(append(up, "--listen", ":9000", "--google-client-id", "id", "--google-client-secret", "s"), envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var redirect string
	for _, p := range c.Providers {
		if p.Name == "google" {
			redirect = p.RedirectURL
		}
	}
	if redirect != "http://localhost:9000/auth/callback/google" {
		t.Errorf("callback %q; want http://localhost:9000/auth/callback/google", redirect)
	}
}

// Unknown flags and commands name the closest known one and where to read
// more, in the server and in every subcommand, and every usage error exits
// 2; a failure at run time exits 1.
func TestUsageErrorsEverywhere(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "g.db")
	tests := []struct {
		args  []string
		code  int
		equal string // the whole of stderr
		has   string // or a part of it
	}{
		{[]string{"--upstrem", "http://127.0.0.1:3000"}, 2, "gatehouse: unknown flag --upstrem (did you mean --upstream?); see gatehouse --help\n", ""},
		{[]string{"--upstream", "http://127.0.0.1:3000", "--sesion-ttl", "1h"}, 2, "gatehouse: unknown flag --sesion-ttl (did you mean --session-ttl?); see gatehouse --help\n", ""},
		{[]string{"--upstream", "http://127.0.0.1:3000", "--completely-different"}, 2, "gatehouse: unknown flag --completely-different; see gatehouse --help\n", ""},
		{[]string{"-upstream", "http://127.0.0.1:3000"}, 2, "gatehouse: unknown flag -upstream (did you mean --upstream?); see gatehouse --help\n", ""},
		{[]string{"--upstream"}, 2, "", "see gatehouse --help"},
		{[]string{"usres", "list"}, 2, "gatehouse: unknown command \"usres\" (did you mean users?); see gatehouse --help\n", ""},
		{[]string{"verison"}, 2, "gatehouse: unknown command \"verison\" (did you mean version?); see gatehouse --help\n", ""},
		{[]string{"users", "ad"}, 2, "gatehouse users: unknown command \"ad\" (did you mean add?); see gatehouse users --help\n", ""},
		{[]string{"users", "list", "--dbb", db}, 2, "gatehouse users: unknown flag --dbb (did you mean --db?); see gatehouse users list --help\n", ""},
		{[]string{"users", "add", "--emial", "a@example.com"}, 2, "gatehouse users: unknown flag --emial (did you mean --email?); see gatehouse users add --help\n", ""},
		{[]string{"users", "list", "extra", "--db", db}, 2, "", "see gatehouse users list --help"},
		// A missing or bad value is a usage error in a subcommand as in the server.
		{[]string{"users", "add", "--db", db, "--password-stdin"}, 2, "", "--email"},
		{[]string{"users", "revoke-sessions", "--db", db, "--email", "not an address"}, 2, "", "--email"},
		{[]string{"--upstream", "http://127.0.0.1:3000", "--mode", "maybe"}, 2, "", "--mode"},
		// A failure at run time is 1.
		{[]string{"users", "revoke-sessions", "--db", db, "--email", "nobody@example.com"}, 1, "", "does not exist"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		code := run(tt.args, strings.NewReader(""), &out, &errOut, envOf(nil))
		got := errOut.String()
		if code != tt.code || tt.equal != "" && got != tt.equal || !strings.Contains(got, tt.has) || strings.Count(got, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and one line %q", tt.args, code, got, tt.code, tt.equal+tt.has)
		}
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"listen", "upstream", "upstream-timeout", "base-url", "db", "session-ttl", "session-idle-ttl", "help"}
	for _, tt := range []struct{ in, want string }{
		{"upstrem", "upstream"},
		{"upstraem", "upstream"},
		{"lsiten", "listen"},
		{"LISTN", "listen"},
		{"baseurl", "base-url"},
		{"dbb", "db"},
		{"upstream-timout", "upstream-timeout"},
		{"session-idle", "session-idle-ttl"},
		{"session", ""}, // two flags start with it, neither is close
		{"x", ""},
		{"help", ""},
		{"", ""},
		{"mode", ""},
	} {
		if got := suggest(tt.in, names); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// When --http-listen cannot be bound, the error says that --tls-domain
// implied :80 and what to do.
func TestHTTPListenErrorExplains(t *testing.T) {
	bindErr := func(errno syscall.Errno) error {
		return fmt.Errorf("listen tcp :80: %w", &os.SyscallError{Syscall: "bind", Err: errno})
	}
	implied := TLSConfig{Domains: []string{"a.example.com"}, HTTPListen: ":80", HTTPListenImplied: true}
	for _, tt := range []struct {
		c     TLSConfig
		errno syscall.Errno
		want  []string
	}{
		{implied, syscall.EACCES, []string{"--http-listen :80", "implied by --tls-domain", "permission denied", "CAP_NET_BIND_SERVICE", "set --http-listen"}},
		{implied, syscall.EADDRINUSE, []string{"--http-listen :80", "implied by --tls-domain", "another server holds that port"}},
		{TLSConfig{HTTPListen: ":8081"}, syscall.EADDRINUSE, []string{"--http-listen :8081", "another server"}},
	} {
		err := httpListenError(tt.c, bindErr(tt.errno))
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%v: %q does not say %q on one line", tt.errno, err, w)
			}
		}
		if !errors.Is(err, tt.errno) {
			t.Errorf("%q does not wrap the bind error", err)
		}
		if tt.c.HTTPListenImplied != strings.Contains(err.Error(), "implied") {
			t.Errorf("%q: mentions the implied default wrongly", err)
		}
	}
	c, err := parseServe([]string{"--upstream", "http://127.0.0.1:3000", "--tls-domain", "a.example.com"}, envOf(nil), io.Discard)
	if err != nil || c.TLS.HTTPListen != ":80" || !c.TLS.HTTPListenImplied {
		t.Fatalf("--tls-domain: --http-listen %q implied %t, %v; want :80 implied", c.TLS.HTTPListen, c.TLS.HTTPListenImplied, err)
	}
	c, err = parseServe([]string{"--upstream", "http://127.0.0.1:3000", "--tls-domain", "a.example.com", "--http-listen", ":8081"}, envOf(nil), io.Discard)
	if err != nil || c.TLS.HTTPListenImplied {
		t.Fatalf("--http-listen given: implied %t, %v", c.TLS.HTTPListenImplied, err)
	}
}

// A start that fails on a port creates no certificate folder and orders
// nothing: --tls-storage is made only once every port is bound.
func TestFailedStartCreatesNoCertFolder(t *testing.T) {
	held := listenLoopback(t)
	defer held.Close()
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	code := run([]string{"--upstream", "http://127.0.0.1:3000", "--db", filepath.Join(dir, "gatehouse.db"),
		"--mail-dir", filepath.Join(dir, "mail"), "--listen", "127.0.0.1:0", "--admin-listen", "",
		"--tls-domain", "a.example.com", "--acme-ca", "https://127.0.0.1:1/directory", "--http-listen", held.Addr().String()},
		strings.NewReader(""), &out, &errOut, envOf(nil))
	if code != 1 || !strings.Contains(errOut.String(), "--http-listen "+held.Addr().String()) {
		t.Fatalf("exit %d, stderr %q; want 1 and the --http-listen bind error", code, errOut.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "gatehouse-certs")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failed start left gatehouse-certs/ behind: %v", err)
	}
}

// --tls-storage that can never be a folder is refused at start, before any
// port is opened, without creating anything.
func TestTLSStorageCheckedWithoutCreating(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := checkCreatableDir(filepath.Join(file, "certs")); err == nil {
		t.Error("a folder below a file was accepted")
	}
	want := filepath.Join(dir, "a", "b")
	if err := checkCreatableDir(want); err != nil {
		t.Errorf("a new folder below a folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("checking created a folder: %v", err)
	}
}
