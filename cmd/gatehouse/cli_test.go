package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
)

// Every flag of the server can come from GATEHOUSE_<FLAG>.
func TestEveryFlagFromEnvironment(t *testing.T) {
	all, _ := serveFlags(io.Discard)
	for _, name := range allFlagNames(all) {
		if name == "help" {
			continue
		}
		fs, _ := serveFlags(io.Discard)
		f := fs.Lookup(name)
		var value, want string
		switch typ := f.Value.Type(); typ {
		case "string":
			value, want = "env-value-of-"+name, "env-value-of-"+name
		case "duration":
			value, want = "17m", "17m0s"
		case "int":
			value, want = "77", "77"
		case "bool":
			value, want = "true", "true"
			if f.DefValue == "true" {
				value, want = "false", "false"
			}
		case "stringSlice":
			value, want = "/a,/b", "[/a,/b]"
		default:
			t.Errorf("--%s: no sample value for type %s", name, typ)
			continue
		}
		variable := envName(name)
		if err := applyEnv(fs, envOf(map[string]string{variable: value})); err != nil {
			t.Errorf("%s=%s: %v", variable, value, err)
			continue
		}
		if got := f.Value.String(); got != want {
			t.Errorf("%s=%s: --%s is %q, want %q", variable, value, name, got, want)
		}
	}
	if v := envName("smtp-password-file"); v != "GATEHOUSE_SMTP_PASSWORD_FILE" {
		t.Errorf("envName(smtp-password-file) = %q", v)
	}
}

// A bad value from the environment is refused like one from the command line.
func TestBadEnvironmentValueNamesFlag(t *testing.T) {
	for variable, flag := range map[string]string{
		"GATEHOUSE_SESSION_TTL":         "--session-ttl",
		"GATEHOUSE_PASSWORD_MIN_LENGTH": "--password-min-length",
		"GATEHOUSE_MODE":                "--mode",
		"GATEHOUSE_COOKIE_SECURE":       "--cookie-secure",
	} {
		value := map[string]string{"GATEHOUSE_SESSION_TTL": "-1h", "GATEHOUSE_PASSWORD_MIN_LENGTH": "many",
			"GATEHOUSE_MODE": "maybe", "GATEHOUSE_COOKIE_SECURE": "perhaps"}[variable]
		_, err := parseServe([]string{"--upstream", "http://127.0.0.1:3000"}, envOf(map[string]string{variable: value}), io.Discard)
		if err == nil || !strings.Contains(err.Error(), flag) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s=%s: error %v, want one line naming %s", variable, value, err, flag)
		}
	}
}

// Secrets from --X-file and GATEHOUSE_X_FILE; the file's line ending is not
// part of the secret, and no error repeats the secret.
func TestSecretFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	smtp := write("smtp", "smtp-s3cret\r\n")
	google := write("google", "google-s3cret\n")
	github := write("github", "github-s3cret")
	up := []string{"--upstream", "http://127.0.0.1:3000"}

	c, err := parseServe(append(up, "--smtp-password-file", smtp, "--github-client-id", "id", "--github-client-secret-file", github),
		envOf(map[string]string{"GATEHOUSE_GOOGLE_CLIENT_ID": "gid", "GATEHOUSE_GOOGLE_CLIENT_SECRET_FILE": google}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][2]string{
		"smtp":   {c.SMTP.Password, "smtp-s3cret"},
		"google": {c.provider("google").ClientSecret, "google-s3cret"},
		"github": {c.provider("github").ClientSecret, "github-s3cret"},
	} {
		if got[0] != got[1] {
			t.Errorf("%s secret %q, want %q", name, got[0], got[1])
		}
	}

	bad := []struct {
		args []string
		env  map[string]string
		flag string
	}{
		{[]string{"--smtp-password-file", filepath.Join(dir, "missing")}, nil, "--smtp-password-file"},
		{[]string{"--google-client-id", "id", "--google-client-secret-file", dir}, nil, "--google-client-secret-file"},
		// Both forms from the environment: nothing on the command line settles it.
		{nil, map[string]string{"GATEHOUSE_SMTP_PASSWORD": "other-s3cret", "GATEHOUSE_SMTP_PASSWORD_FILE": smtp}, "--smtp-password-file"},
		{[]string{"--github-client-id", "id", "--github-client-secret", "github-s3cret", "--github-client-secret-file", github}, nil, "--github-client-secret-file"},
	}
	for _, tc := range bad {
		_, err := parseServe(append(up, tc.args...), envOf(tc.env), io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.flag) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want one line naming %s", tc.args, err, tc.flag)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%q: the error repeats the secret: %v", tc.args, err)
		}
	}
}

// A bad value stops the start before any port is opened: with the ports
// held here, a server that listened first would report "address already in
// use" rather than the bad flag. Checks made while building the server
// (after the flags) also come before listening.
func TestBadFlagOpensNoPort(t *testing.T) {
	held, heldAdmin := listenLoopback(t), listenLoopback(t)
	defer held.Close()
	defer heldAdmin.Close()
	dir := t.TempDir()
	notADir := filepath.Join(dir, "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ports := []string{"--listen", held.Addr().String(), "--admin-listen", heldAdmin.Addr().String(), "--db", filepath.Join(dir, "g.db")}
	cases := []struct {
		args []string
		env  map[string]string
		flag string
	}{
		{[]string{"--upstream", "http://127.0.0.1:3000", "--mode", "maybe"}, nil, "--mode"},
		{[]string{"--upstream", "127.0.0.1:3000"}, nil, "--upstream"},
		{[]string{"--upstream", "http://127.0.0.1:3000"}, map[string]string{"GATEHOUSE_SESSION_IDLE_TTL": "-1m"}, "--session-idle-ttl"},
		{[]string{"--upstream", "http://127.0.0.1:3000", "--base-url", "example.com"}, nil, "--base-url"},
		{[]string{"--upstream", "http://127.0.0.1:3000", "--mail-dir", filepath.Join(notADir, "mail")}, nil, "--mail-dir"},
	}
	for _, tc := range cases {
		var out, errOut bytes.Buffer
		code := run(append(tc.args, ports...), strings.NewReader(""), &out, &errOut, envOf(tc.env))
		msg := strings.TrimSpace(errOut.String())
		if code == 0 {
			t.Errorf("%q: exit 0", tc.args)
		}
		if lines := strings.Split(msg, "\n"); len(lines) != 1 || !strings.Contains(msg, tc.flag) {
			t.Errorf("%q: stderr %q, want one line naming %s", tc.args, msg, tc.flag)
		}
		if strings.Contains(msg, "address already in use") {
			t.Errorf("%q: a port was opened before the bad value was found: %q", tc.args, msg)
		}
	}
}

func TestUsersSubcommands(t *testing.T) {
	db := filepath.Join(t.TempDir(), "users.db")
	users := func(stdin string, env map[string]string, args ...string) (int, string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		code := run(append([]string{"users"}, args...), strings.NewReader(stdin), &out, &errOut, envOf(env))
		return code, out.String(), errOut.String()
	}

	// add: the password comes from standard input only, is stored as an
	// argon2id PHC string with the OWASP parameters, and the email is
	// stored normalized.
	code, out, errOut := users("a long passphrase here\r\n", nil, "add", "--db", db, "--email", " Bob@Example.COM ", "--password-stdin")
	if code != 0 || !regexp.MustCompile(`^added user bob@example\.com \([0-9a-f]{32}\)\n$`).MatchString(out) {
		t.Fatalf("users add: %d %q %q", code, out, errOut)
	}
	refused := []struct {
		stdin string
		args  []string
		want  string
	}{
		{"another long passphrase\n", []string{"--email", "BOB@example.com", "--password-stdin"}, "already exists"},
		{"", []string{"--email", "carol@example.com"}, "--password-stdin"},
		{"short\n", []string{"--email", "carol@example.com", "--password-stdin"}, "password refused"},
		{"carol@example.com\n", []string{"--email", "carol@example.com", "--password-stdin", "--password-min-length", "8"}, "password refused"},
		{"fifteen chars!!\n", []string{"--email", "carol@example.com", "--password-stdin", "--password-min-length", "20"}, "password refused"},
		{"a long passphrase here\n", []string{"--email", "not an email", "--password-stdin"}, "--email"},
		{"a long passphrase here\n", []string{"--password-stdin"}, "--email"},
	}
	for _, tc := range refused {
		code, out, errOut := users(tc.stdin, nil, append([]string{"add", "--db", db}, tc.args...)...)
		if code == 0 || !strings.Contains(errOut, tc.want) || strings.Contains(out, "added") {
			t.Errorf("users add %q: exit %d, stdout %q, stderr %q; want a refusal naming %q", tc.args, code, out, errOut, tc.want)
		}
		if tc.stdin != "" && strings.Contains(errOut, strings.TrimSpace(tc.stdin)) && !strings.Contains(tc.stdin, "@") {
			t.Errorf("users add %q: the password is in the error: %q", tc.args, errOut)
		}
	}

	// list, with the database from GATEHOUSE_DB.
	code, out, errOut = users("", map[string]string{"GATEHOUSE_DB": db}, "list")
	if code != 0 || !strings.HasPrefix(out, "ID") || !regexp.MustCompile(`(?m)^[0-9a-f]{32}\s+bob@example\.com\s+true\s`).MatchString(out) {
		t.Fatalf("users list: %d %q %q", code, out, errOut)
	}
	if strings.Contains(out, "carol") || strings.Contains(out, "argon2") {
		t.Errorf("users list shows a refused user or a hash: %q", out)
	}

	// The stored record.
	store, err := bolt.Open(db, bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := store.UserByEmail(t.Context(), "bob@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(bob.PasswordHash, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Errorf("stored hash %q, want argon2id with m=19456,t=2,p=1", bob.PasswordHash)
	}
	ok, _, err := password.NewHasher(password.DefaultHashParams).Verify(t.Context(), bob.PasswordHash, "a long passphrase here")
	if err != nil || !ok {
		t.Errorf("the stored hash does not verify the password without its line ending: %v %v", ok, err)
	}
	// Sessions of two users; revoke-sessions ends only bob's.
	other := storage.User{ID: storage.NewUserID(), Email: "dave@example.com", CreatedAt: time.Now()}
	if err := store.CreateUser(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var hashes []storage.Hash
	for i, uid := range []string{bob.ID, bob.ID, other.ID} {
		h := storage.HashSecret(fmt.Sprint("session ", i))
		hashes = append(hashes, h)
		if err := store.CreateSession(t.Context(), storage.Session{IDHash: h, UserID: uid, ExpiresAt: now.Add(time.Hour), LastSeen: now}); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	code, out, errOut = users("", nil, "revoke-sessions", "--db", db, "--email", "BOB@example.com")
	if code != 0 || out != "revoked 2 sessions of bob@example.com\n" {
		t.Fatalf("revoke-sessions: %d %q %q", code, out, errOut)
	}
	// LG2: the revocation is an event line with the user id and the count.
	if !regexp.MustCompile(`^time=\S+ level=INFO msg="auth event" event=sessions_revoked user_id=` + bob.ID + ` sessions_revoked=2 `).MatchString(errOut) {
		t.Errorf("revoke-sessions event line: %q", errOut)
	}
	if code, _, errOut := users("", nil, "revoke-sessions", "--db", db, "--email", "nobody@example.com"); code == 0 || !strings.Contains(errOut, "no user with email nobody@example.com") {
		t.Errorf("revoke-sessions of an unknown user: %d %q", code, errOut)
	}
	store, err = bolt.Open(db, bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for i, h := range hashes {
		_, err := store.Session(t.Context(), h)
		if gone := err != nil; gone != (i < 2) {
			t.Errorf("session %d: gone %v, want %v (%v)", i, gone, i < 2, err)
		}
	}

	if code, _, errOut := users("", nil, "frobnicate"); code == 0 || !strings.Contains(errOut, "frobnicate") {
		t.Errorf("unknown users command: %d %q", code, errOut)
	}
	if code, _, errOut := users("", nil, "list", "extra"); code == 0 || !strings.Contains(errOut, "extra") {
		t.Errorf("users list with an extra argument: %d %q", code, errOut)
	}
}

// LG3: both log formats keep user input on one line; --log-level filters.
func TestLoggerEscapesLineBreaks(t *testing.T) {
	forged := "x\r\ntime=2026-01-01T00:00:00Z level=ERROR msg=forged\n{\"level\":\"ERROR\"}"
	for _, format := range []string{"text", "json"} {
		var buf bytes.Buffer
		logger := newLogger(&buf, format, "info")
		logger.Debug("hidden at info", "v", 1)
		logger.Info("auth event", "email", forged)
		out := buf.String()
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 1 || strings.Contains(out, "\r") {
			t.Errorf("%s: %d lines: %q", format, len(lines), out)
		}
		if strings.Contains(out, "hidden at info") {
			t.Errorf("%s: debug line written at info", format)
		}
		if format == "json" {
			var v map[string]any
			if err := json.Unmarshal([]byte(lines[0]), &v); err != nil || v["email"] != forged {
				t.Errorf("json: line does not decode to the value: %v %v", v, err)
			}
		}
	}
}

// --admin-listen "" disables the admin listener; the proxy still listens.
func TestAdminListenEmptyDisables(t *testing.T) {
	dir := t.TempDir()
	cfg, err := parseServe([]string{"--upstream", "http://127.0.0.1:3000", "--db", filepath.Join(dir, "g.db"),
		"--mail-dir", filepath.Join(dir, "mail"), "--listen", "127.0.0.1:0", "--base-url", "http://localhost", "--admin-listen", ""}, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newServer(t.Context(), cfg, newLogger(io.Discard, "text", "info"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	ls, err := s.listen()
	if err != nil {
		t.Fatal(err)
	}
	defer ls.close()
	if ls.main == nil || ls.admin != nil || ls.http != nil {
		t.Fatalf("listeners: main %v, admin %v, http %v; want only main", ls.main, ls.admin, ls.http)
	}
}
