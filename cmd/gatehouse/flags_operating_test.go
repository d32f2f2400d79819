package main

// Findings of the outside review "operating it" (x5): flag and environment
// handling that breaks the contract's "Command line" promises. Each test
// fails against the code it was written for.

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A URL flag that does not parse is echoed in the error as given, user info
// and password included. TestURLErrorHidesPassword covers only a URL that
// parses; one with a bad port (or any other parse error) leaks the password
// to stderr, and so to the journal or the pod's log (LG1, "errors never
// carry a secret").
func TestUnparsableURLErrorHidesPassword(t *testing.T) {
	for _, args := range [][]string{
		{"--upstream", "http://admin:s3cret-pw@127.0.0.1:30x0"},
		{"--upstream", "http://127.0.0.1:3000", "--base-url", "https://admin:s3cret-pw@app.example.com:44x3"},
	} {
		_, err := parseServe(args, envOf(nil), &bytes.Buffer{})
		if err == nil {
			t.Fatalf("%v: accepted", args)
		}
		if strings.Contains(err.Error(), "s3cret-pw") {
			t.Errorf("%v: the error prints the password: %v", args, err)
		}
	}
}

// A --listen or --admin-listen port outside 0–65535 is a bad flag value: the
// contract wants one line naming the flag and exit 2 before the database or
// any port is opened. Today the value passes parseServe, the database is
// opened (a signing key is even written to it) and the bind fails with
// exit 1.
func TestOutOfRangePortIsAUsageError(t *testing.T) {
	for _, flag := range []string{"listen", "admin-listen"} {
		t.Run(flag, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "g.db")
			args := []string{"--upstream", "http://127.0.0.1:3000", "--db", db, "--base-url", "http://localhost:8080",
				"--mail-dir", filepath.Join(dir, "mail"), "--admin-socket", "",
				"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"}
			args = append(args, "--"+flag, "127.0.0.1:99999")
			var out, errOut bytes.Buffer
			code := run(args, strings.NewReader(""), &out, &errOut, envOf(nil))
			if code != exitUsage {
				t.Errorf("exit %d, want %d (usage error); stderr %q", code, exitUsage, errOut.String())
			}
			if lines := strings.Split(strings.TrimSpace(errOut.String()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "--"+flag) {
				t.Errorf("stderr = %q, want one line naming --%s", errOut.String(), flag)
			}
		})
	}
}

// "A flag given on the command line wins" over its GATEHOUSE_* variable. A
// secret set in the environment (the Kubernetes Secret of deploy/) and its
// -file form on the command line, or the other way round, must start with
// the command line's value; today the start is refused as "not both".
func TestCommandLineSecretWinsOverEnvironment(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "smtp-password")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--upstream", "http://127.0.0.1:3000", "--smtp-addr", "127.0.0.1:25", "--smtp-username", "u"}

	c, err := parseServe(append(base, "--smtp-password-file", file), envOf(map[string]string{"GATEHOUSE_SMTP_PASSWORD": "from-env"}), &bytes.Buffer{})
	if err != nil {
		t.Errorf("--smtp-password-file on the command line with GATEHOUSE_SMTP_PASSWORD set: %v", err)
	} else if c.SMTP.Password != "from-file" {
		t.Errorf("password = %q, want the command line's file", c.SMTP.Password)
	}

	c, err = parseServe(append(base, "--smtp-password", "from-flag"), envOf(map[string]string{"GATEHOUSE_SMTP_PASSWORD_FILE": file}), &bytes.Buffer{})
	if err != nil {
		t.Errorf("--smtp-password on the command line with GATEHOUSE_SMTP_PASSWORD_FILE set: %v", err)
	} else if c.SMTP.Password != "from-flag" {
		t.Errorf("password = %q, want the command line's value", c.SMTP.Password)
	}
}

// The PostgreSQL --db URL carries the database password, and the README's
// own example passes it on the command line, where every local user reads
// it in ps and /proc/PID/cmdline. The contract: "Secrets also accept
// --X-file PATH". There is no --db-file.
func TestDatabaseURLFromFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "db-url")
	const url = "postgres://gatehouse:s3cret@db.internal:5432/gatehouse?sslmode=verify-full"
	if err := os.WriteFile(file, []byte(url+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := parseServe([]string{"--upstream", "http://127.0.0.1:3000", "--db-file", file}, envOf(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatalf("--db-file: %v", err)
	}
	if c.DB != url {
		t.Errorf("db = %q, want the file's URL", c.DB)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"users", "list", "--help"}, strings.NewReader(""), &out, &errOut, envOf(nil)); code != 0 || !strings.Contains(out.String(), "--db-file") {
		t.Errorf("gatehouse users list --help does not offer --db-file (exit %d): %s%s", code, out.String(), errOut.String())
	}
}

// --base-url must not carry a query or fragment (parseURL), but a bare "?"
// (url.URL.ForceQuery with an empty RawQuery) slips through, and every
// absolute URL derived from it breaks: the OAuth redirect_uri becomes
// "https://app.example.com?/auth/callback/google" (the provider's code and
// state then land on "/" and go through the proxy), the assertion's iss and
// aud end in "?".
func TestBaseURLWithEmptyQueryRefused(t *testing.T) {
	c, err := parseServe([]string{"--upstream", "http://127.0.0.1:3000", "--base-url", "https://app.example.com?",
		"--google-client-id", "id", "--google-client-secret", "s"}, envOf(nil), &bytes.Buffer{})
	if err == nil {
		t.Errorf("--base-url https://app.example.com? accepted: base %q, Google redirect_uri %q, assertion aud %q",
			c.BaseURL, c.provider("google").RedirectURL, c.AssertionAudience)
	} else if !strings.Contains(err.Error(), "--base-url") {
		t.Errorf("error does not name --base-url: %v", err)
	}
}

// A --db that is not a valid PostgreSQL URL is a bad value: exit 2 for the
// server (TestBadDatabaseURL) and, by the README's "exit codes are the same
// in the server and in every subcommand", for the users commands too. They
// exit 1, as if the database had failed at run time.
func TestSubcommandBadDatabaseURLIsAUsageError(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"users", "list", "--db", "postgres://u:s3cret@db.internal:54x2/gatehouse"}, strings.NewReader(""), &out, &errOut, envOf(nil))
	if code != exitUsage {
		t.Errorf("exit %d, want %d; stderr %q", code, exitUsage, errOut.String())
	}
	if strings.Contains(errOut.String(), "s3cret") {
		t.Errorf("stderr prints the password: %q", errOut.String())
	}
}

// A --public-path that is not in clean form is cleaned without a word, and
// "/static/.." (a templated "${ASSETS}/..", say) becomes "/": every path of
// the app is served without a session. The contract: "Bad flag values stop
// the process at start"; a public path that cleans to another, wider one (or
// to "/" without being given as "/") should be refused naming the flag.
func TestPublicPathThatCleansWiderIsRefused(t *testing.T) {
	for _, p := range []string{"/static/..", "/.", "//", "/static/../"} {
		_, err := parseServe([]string{"--upstream", "http://127.0.0.1:3000", "--public-path", p}, envOf(nil), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "--public-path") {
			t.Errorf("--public-path %q: err = %v, want a usage error naming --public-path", p, err)
		}
	}
}
