package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
)

// tokenRun is one command of tokensScript and what it answered.
type tokenRun struct {
	name           string
	code           int
	stdout, stderr string
}

// tokensScript is a day of token administration on --db db: tokens made
// for a service, a user and a script wanting JSON, listed, one revoked
// twice. It returns each command's answer as is.
func tokensScript(t *testing.T, db string) []tokenRun {
	t.Helper()
	if code, _, errOut := cli(t, testPassword+"\n", "users", "add", "bob@example.com", "--password-stdin", "--db", db); code != 0 {
		t.Fatalf("users add: %d %s", code, errOut)
	}
	steps := []struct {
		name string
		args func(done []tokenRun) []string
	}{
		{"create-service", fixed("create", "--name", "deploys", "--service", "ci.deploy", "--group", "oidc:deployers", "--group", "svc:ci", "--ttl", "720h")},
		{"create-user", fixed("create", "--name", "laptop script", "--user", "BOB@example.com")},
		{"create-json", fixed("create", "--name", "backups", "--service", "backup", "--json")},
		{"list", fixed("list")},
		{"list-json", fixed("list", "--json")},
		{"revoke", func(done []tokenRun) []string { return []string{"revoke", createdID(t, done[0])} }},
		{"revoke-again", func(done []tokenRun) []string { return []string{"revoke", createdID(t, done[0])} }},
		{"create-unknown-user", fixed("create", "--name", "x", "--user", "nobody@example.com")},
		{"list-after", fixed("list")},
	}
	var runs []tokenRun
	for _, s := range steps {
		args := append([]string{"tokens"}, s.args(runs)...)
		code, out, errOut := cli(t, "", append(args, "--db", db)...)
		var errLines []string // on the file, stderr also has the event lines a server logs
		for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
			if !strings.Contains(l, `msg="auth event"`) {
				errLines = append(errLines, l)
			}
		}
		runs = append(runs, tokenRun{name: s.name, code: code, stdout: out, stderr: strings.Join(errLines, "\n")})
	}
	return runs
}

func fixed(args ...string) func([]tokenRun) []string {
	return func([]tokenRun) []string { return args }
}

var createdLine = regexp.MustCompile(`^created token ([0-9a-f]{16}) `)

// createdID is the id a tokens create told on stderr.
func createdID(t *testing.T, r tokenRun) string {
	t.Helper()
	m := createdLine.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("%s: no token id on stderr: %q", r.name, r.stderr)
	}
	return m[1]
}

// tokenSecrets are the secrets the runs printed: the one line of each
// plain create, the "token" member of a JSON create.
func tokenSecrets(t *testing.T, runs []tokenRun) []string {
	t.Helper()
	var secrets []string
	for _, r := range runs {
		switch r.name {
		case "create-service", "create-user":
			secrets = append(secrets, strings.TrimSuffix(r.stdout, "\n"))
		case "create-json":
			var nt struct {
				Token string `json:"token"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &nt); err != nil {
				t.Fatalf("create --json: %v\n%s", err, r.stdout)
			}
			secrets = append(secrets, nt.Token)
		}
	}
	return secrets
}

var maskTokens = regexp.MustCompile(`ghp_[A-Za-z0-9_-]{43}|[0-9a-f]{32}|[0-9a-f]{16}|\d{4}-\d\d-\d\dT[\d:.]+Z`)

// Through the running server's socket and on a file no server holds, the
// token commands answer alike; a token is printed once (alone on stdout),
// list never prints a token or its hash, and every change is audited by
// the server that made it.
func TestTokensCommandsThroughSocketAndOnTheFile(t *testing.T) {
	up, _ := echoUpstream(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "gatehouse.db")
	auditFile := filepath.Join(dir, "audit.log")
	g := startGatehouse(t, db, "--upstream", up.URL, "--audit-log", auditFile)
	live := tokensScript(t, db)
	liveLogs := g.Logs.String()
	g.Stop()
	offline := tokensScript(t, filepath.Join(t.TempDir(), "gatehouse.db"))

	for i := range live {
		l, o := live[i], offline[i]
		lm := maskTokens.ReplaceAllString(strconv.Itoa(l.code)+" "+l.stdout+" | "+l.stderr, "X")
		om := maskTokens.ReplaceAllString(strconv.Itoa(o.code)+" "+o.stdout+" | "+o.stderr, "X")
		if lm != om {
			t.Errorf("%s through the socket:\n  %q\non the file:\n  %q", l.name, lm, om)
		}
	}
	want := map[string]string{
		"create-service":      "0 X\n | created token X (deploys) for service:ci.deploy, expires X; it is shown only this once",
		"create-user":         "0 X\n | created token X (laptop script) for bob@example.com, does not expire; it is shown only this once",
		"revoke":              "0 revoked token X (deploys) of service:ci.deploy\n | ",
		"revoke-again":        "1  | gatehouse tokens revoke: no API token with id X",
		"create-unknown-user": "1  | gatehouse tokens create: no user with email nobody@example.com",
	}
	byName := map[string]tokenRun{}
	for _, r := range live {
		byName[r.name] = r
		if w, ok := want[r.name]; ok {
			if got := maskTokens.ReplaceAllString(strconv.Itoa(r.code)+" "+r.stdout+" | "+r.stderr, "X"); got != w {
				t.Errorf("%s: %q\nwant %q", r.name, got, w)
			}
		}
	}

	secrets := tokenSecrets(t, live)
	if len(secrets) != 3 {
		t.Fatalf("%d secrets printed, want 3", len(secrets))
	}
	for _, s := range secrets {
		if !storage.IsAPITokenShape(s) {
			t.Fatalf("printed token %q is not ghp_ and 43 base64url characters", s)
		}
	}
	// tokens list, in either form, never prints a token or its hash.
	for _, name := range []string{"list", "list-json", "list-after"} {
		out := byName[name].stdout + byName[name].stderr
		for _, s := range secrets {
			h := storage.HashSecret(s)
			if strings.Contains(out, s) || strings.Contains(out, strings.TrimPrefix(s, storage.APITokenPrefix)) ||
				strings.Contains(out, hex.EncodeToString(h[:])) {
				t.Errorf("tokens %s printed a token or its hash:\n%s", name, out)
			}
		}
	}
	list := byName["list"].stdout
	for _, w := range []string{"ID  ", "NAME", "OWNER", "GROUPS", "CREATED", "EXPIRES", "LAST USED",
		"deploys", "service:ci.deploy", "oidc:deployers,svc:ci", "laptop script", "bob@example.com", "never"} {
		if !strings.Contains(list, w) {
			t.Errorf("tokens list lacks %q:\n%s", w, list)
		}
	}
	var listed []map[string]any
	if err := json.Unmarshal([]byte(byName["list-json"].stdout), &listed); err != nil || len(listed) != 3 {
		t.Fatalf("tokens list --json: %v\n%s", err, byName["list-json"].stdout)
	}
	for _, key := range []string{"id", "name", "owner", "groups", "created_at", "expires_at", "last_used"} {
		if _, ok := listed[0][key]; !ok {
			t.Errorf("tokens list --json: no %q in %v", key, listed[0])
		}
	}
	if revoked := createdID(t, byName["create-service"]); strings.Contains(byName["list-after"].stdout, revoked) ||
		!strings.Contains(byName["list"].stdout, revoked) {
		t.Errorf("the revoked token %s: listed before %v, after %v", revoked,
			strings.Contains(byName["list"].stdout, revoked), strings.Contains(byName["list-after"].stdout, revoked))
	}

	// The server made the changes (its log has the event lines) and
	// audited them; no secret in either.
	if n := strings.Count(liveLogs, "event=token_created"); n != 3 || !strings.Contains(liveLogs, "event=token_revoked") {
		t.Errorf("server log: %d token_created lines, token_revoked %v:\n%s", n, strings.Contains(liveLogs, "event=token_revoked"), liveLogs)
	}
	trail, err := os.ReadFile(auditFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(trail), `"event":"token_created"`) != 3 || strings.Count(string(trail), `"event":"token_revoked"`) != 1 {
		t.Errorf("audit trail:\n%s", trail)
	}
	for _, s := range secrets {
		if strings.Contains(string(trail), s[4:]) || strings.Contains(liveLogs, s[4:]) {
			t.Errorf("a token in the audit trail or the server log")
		}
	}

	// What the server stored: the user's token acts for bob, the revoked one is gone.
	store, err := bolt.Open(db, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	tok, owner, err := store.APITokenByHash(t.Context(), storage.HashSecret(secrets[1]))
	if err != nil || owner.Email != "bob@example.com" || tok.Name != "laptop script" {
		t.Errorf("the user's token: %+v %+v %v", tok, owner, err)
	}
	if _, _, err := store.APITokenByHash(t.Context(), storage.HashSecret(secrets[0])); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("the revoked token: %v, want not found", err)
	}
}

// Bad command lines are usage errors (exit 2) that name what to fix, and
// are refused before any store is opened: the file named by --db does not
// even exist.
func TestTokensUsageErrors(t *testing.T) {
	db := filepath.Join(t.TempDir(), "none.db")
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"create", "--service", "ci"}, "--name"},
		{[]string{"create", "--name", "n"}, "--user E or --service S is required"},
		{[]string{"create", "--name", "n", "--user", "a@example.com", "--service", "ci"}, "either --user or --service, not both"},
		{[]string{"create", "--name", "n", "--service", "ci", "--ttl", "0"}, "--ttl"},
		{[]string{"create", "--name", "n", "--service", "ci", "--ttl", "-1h"}, "--ttl"},
		{[]string{"create", "--name", "n", "--service", "ci", "--ttl", "90d"}, "--ttl"},
		{[]string{"create", "--name", "n", "--service", "ci", "--group", "admins"}, "prefix:name"},
		{[]string{"create", "--name", "n", "--user", "a@example.com", "--group", "oidc:x"}, "--group is for service tokens"},
		{[]string{"create", "--name", "n", "--service", "Deploy Bot"}, "--service"},
		{[]string{"create", "--name", "n", "--user", "not-an-address"}, "--user"},
		{[]string{"create", "--name", "n", "--service", "ci", "extra"}, `unexpected argument "extra"`},
		{[]string{"revoke"}, "ID is required"},
		{[]string{"revoke", "a", "b"}, `unexpected argument "b"`},
		{[]string{"list", "x"}, `unexpected argument "x"`},
		{[]string{"lsit"}, "did you mean list?"},
	} {
		code, out, errOut := cli(t, "", append(append([]string{"tokens"}, tc.args...), "--db", db)...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.says) || !strings.HasPrefix(errOut, "gatehouse tokens") {
			t.Errorf("tokens %v: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errOut, tc.says)
		}
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused command touched the database: %v", err)
	}
	// A well-formed command on the missing file says so (exit 1).
	if code, _, errOut := cli(t, "", "tokens", "list", "--db", db); code != 1 || !strings.Contains(errOut, "does not exist") {
		t.Errorf("tokens list on a missing file: %d %q", code, errOut)
	}
}
