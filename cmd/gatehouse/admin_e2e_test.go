package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/admin"
	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
)

// cli runs one gatehouse command line in the test process.
func cli(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errOut, envOf(nil))
	return code, out.String(), errOut.String()
}

// adminScript is a day of administration: every command of the contract,
// refusals included. It returns each command's exit code and output, with
// ids and times masked so that two runs compare.
func adminScript(t *testing.T, db string, between func(step string)) []string {
	t.Helper()
	steps := []struct {
		name, stdin string
		args        []string
	}{
		{"add", testPassword + "\n", []string{"users", "add", "bob@example.com", "--password-stdin"}},
		{"add-taken", testPassword + "\n", []string{"users", "add", "--email", "BOB@example.com", "--password-stdin"}},
		{"add-weak", "short\n", []string{"users", "add", "carol@example.com", "--password-stdin"}},
		{"add-empty", "", []string{"users", "add", "carol@example.com", "--password-stdin"}},
		{"invite", "", []string{"users", "add", "dan@example.com", "--invite"}},
		{"list", "", []string{"users", "list"}},
		{"list-json", "", []string{"users", "list", "--json"}},
		{"show", "", []string{"users", "show", "bob@example.com"}},
		{"sessions", "", []string{"sessions", "list", "bob@example.com"}},
		{"revoke", "", []string{"users", "revoke-sessions", "bob@example.com"}},
		{"disable", "", []string{"users", "disable", "bob@example.com"}},
		{"enable", "", []string{"users", "enable", "bob@example.com"}},
		{"set-password", "another fine passphrase\n", []string{"users", "set-password", "bob@example.com", "--password-stdin"}},
		{"delete", "", []string{"users", "delete", "dan@example.com"}},
		{"show-deleted", "", []string{"users", "show", "dan@example.com"}},
		{"unknown-user", "", []string{"users", "disable", "nobody@example.com"}},
		{"keys-rotate", "", []string{"keys", "rotate"}},
		{"typo", "", []string{"users", "lsit"}},
		{"bad-flag", "", []string{"users", "list", "--jsno"}},
	}
	mask := regexp.MustCompile(`[0-9a-f]{32}|\d{4}-\d\d-\d\dT[\d:.]+Z|key [A-Za-z0-9_-]{22} `)
	var got []string
	for _, s := range steps {
		if between != nil {
			between(s.name)
		}
		code, out, errOut := cli(t, s.stdin, append(s.args, "--db", db)...)
		// On the file, stderr also carries the event lines a server would
		// log (LG2); everything else on it must be the same.
		var errLines []string
		for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
			if !strings.Contains(l, `msg="auth event"`) {
				errLines = append(errLines, l)
			}
		}
		got = append(got, mask.ReplaceAllString(s.name+" exit="+strconv.Itoa(code)+" out="+out+" err="+strings.Join(errLines, "\n"), "X"))
	}
	return got
}

// Every command through the running server's socket takes effect on the
// next request, and the same commands on a stopped server's file give the
// same output and exit codes.
func TestAdminCommandsWhileServingAndOnTheFile(t *testing.T) {
	up, _ := echoUpstream(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "gatehouse.db")
	auditFile := filepath.Join(dir, "audit.log")
	g := startGatehouse(t, db, "--upstream", up.URL, "--audit-log", auditFile)
	sock := filepath.Join(dir, "gatehouse.sock")

	c := newClient()
	signedIn := func() bool {
		code, _ := get(t, c, g.URL+"/app")
		return code == http.StatusOK
	}
	live := adminScript(t, db, func(step string) {
		switch step {
		case "list": // bob was added through the socket: he signs in on the next request
			login(t, c, g.URL, "bob@example.com", testPassword)
			if !signedIn() {
				t.Fatal("bob added through the socket cannot reach the app")
			}
		case "disable": // after revoke: the next request is refused
			if signedIn() {
				t.Fatal("revoke-sessions through the socket: the next request still passes")
			}
			login(t, c, g.URL, "bob@example.com", testPassword)
		case "enable": // after disable
			if signedIn() {
				t.Fatal("disable through the socket: the next request still passes")
			}
			body, _ := json.Marshal(map[string]string{"email": "bob@example.com", "password": testPassword})
			resp, err := c.Post(g.URL+"/auth/login", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden { // CONTRACT: 403 account_disabled once the credentials check out
				t.Fatalf("login of a disabled user = %d, want 403", resp.StatusCode)
			}
		case "set-password":
			login(t, c, g.URL, "bob@example.com", testPassword)
		case "delete":
			if signedIn() {
				t.Fatal("set-password: the old session still passes")
			}
			// The owner is told by mail, through the running server's queue.
			notice := waitForMail(t, filepath.Join(dir, "mail"), "Every device that was signed in has been signed out.")
			if !strings.Contains(notice, "To: <bob@example.com>") || strings.Contains(notice, "another fine passphrase") {
				t.Errorf("set-password notice:\n%s", notice)
			}
			login(t, c, g.URL, "bob@example.com", "another fine passphrase")
		}
	})
	if _, err := os.Stat(db); err != nil {
		t.Fatal(err)
	}
	g.Stop()
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("socket left after a clean exit: %v", err)
	}

	// The same day on a file no server holds; where the live run signed in,
	// a session like the one a sign-in makes is stored.
	offlineDB := filepath.Join(t.TempDir(), "gatehouse.db")
	offline := adminScript(t, offlineDB, func(step string) {
		switch step {
		case "list", "disable", "set-password":
		default:
			return
		}
		store, err := bolt.Open(offlineDB, bolt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		u, err := store.UserByEmail(t.Context(), "bob@example.com")
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		if err := store.CreateSession(t.Context(), storage.Session{IDHash: storage.HashSecret(step), UserID: u.ID, Email: u.Email,
			CreatedAt: now, LastSeen: now, ExpiresAt: now.Add(time.Hour), Epoch: u.Epoch, Method: "pwd", IP: "127.0.0.1", UserAgent: "Go-http-client/1.1"}); err != nil {
			t.Fatal(err)
		}
	})
	for i := range live {
		if live[i] != offline[i] {
			t.Errorf("through the socket:\n  %q\non the file:\n  %q", live[i], offline[i])
		}
	}
	want := map[int]string{
		0:  "add exit=0 out=added user bob@example.com (X)\n err=",
		1:  "add-taken exit=1 out= err=gatehouse users add: a user with email bob@example.com already exists",
		3:  "add-empty exit=2 out= err=gatehouse users add: no password on standard input",
		4:  "invite exit=0 out=added user dan@example.com (X); invitation queued\n err=",
		15: "unknown-user exit=1 out= err=gatehouse users disable: no user with email nobody@example.com",
		16: "keys-rotate exit=0 out=new signing Xsigns from now; the previous key stays published for 7 days\n err=",
		17: `typo exit=2 out= err=gatehouse users: unknown command "lsit" (did you mean list?); see gatehouse users --help`,
		18: "bad-flag exit=2 out= err=gatehouse users: unknown flag --jsno (did you mean --json?); see gatehouse users list --help",
	}
	for i, w := range want {
		if live[i] != w {
			t.Errorf("step %d: %q\nwant %q", i, live[i], w)
		}
	}
	if !strings.Contains(live[2], "exit=1") || !strings.Contains(live[2], "password refused") {
		t.Errorf("weak password: %q", live[2])
	}
	if !strings.Contains(live[8], "127.0.0.1  Go-http-client/1.1") {
		t.Errorf("sessions list shows no method, IP or browser: %q", live[8])
	}

	// The audit trail of the live run, written by the server.
	trail, err := os.ReadFile(auditFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []string{"user_created", "invite_sent", "sessions_revoked", "user_disabled", "user_enabled", "password_changed", "user_deleted"} {
		if !strings.Contains(string(trail), `"event":"`+ev+`"`) {
			t.Errorf("audit trail lacks %s:\n%s", ev, trail)
		}
	}
	for _, secret := range []string{testPassword, "another fine passphrase", "argon2"} {
		if strings.Contains(string(trail), secret) {
			t.Errorf("audit trail holds a secret %q", secret)
		}
	}
}

// AD1: the socket is 0600 and owned by the server's user, a stale socket is
// replaced, anything else at the path is kept and refused, and the admin API
// answers on no TCP port.
func TestAdminSocketFileAndNoTCP(t *testing.T) {
	up, _ := echoUpstream(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "gatehouse.db")
	sock := filepath.Join(dir, "gatehouse.sock")

	// A stale socket from a crash.
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()

	g := startGatehouse(t, db, "--upstream", up.URL)
	st, err := os.Lstat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Type() != os.ModeSocket || st.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want a socket with 0600", st.Mode())
	}
	if uid := st.Sys().(*syscall.Stat_t).Uid; int(uid) != os.Getuid() {
		t.Errorf("socket owned by uid %d, want the server's %d", uid, os.Getuid())
	}
	if c, err := admin.Dial(t.Context(), sock); err != nil {
		t.Fatalf("the stale socket was not replaced: %v", err)
	} else if _, err := c.ListUsers(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Not on TCP: neither the proxy port nor the metrics port serve it.
	for _, base := range []string{g.URL, g.AdminURL} {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			req, _ := http.NewRequest(method, base+"/v1/users", strings.NewReader(`{"email":"x@example.com","invite":true}`))
			req.Header.Set("Content-Type", "application/json")
			resp, err := newClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated {
				t.Errorf("%s %s/v1/users = %d: the admin API answers on TCP", method, base, resp.StatusCode)
			}
		}
	}
	g.Stop()

	// A regular file at the path is never deleted: the start fails.
	if err := os.WriteFile(sock, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := listenAdminSocket(sock); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("listen over a regular file: %v", err)
	}
	if b, _ := os.ReadFile(sock); string(b) != "keep me" {
		t.Error("the regular file at the socket path was replaced")
	}
}

// users add creates a missing file; every other command on a missing file
// says so and creates nothing.
func TestCommandsOnMissingFile(t *testing.T) {
	db := filepath.Join(t.TempDir(), "none.db")
	for _, args := range [][]string{{"users", "list"}, {"users", "show", "a@example.com"}, {"sessions", "list", "a@example.com"}, {"users", "delete", "a@example.com"}} {
		code, _, errOut := cli(t, "", append(args, "--db", db)...)
		if code != 1 || !strings.Contains(errOut, "does not exist") {
			t.Errorf("%v on a missing file: %d %q", args, code, errOut)
		}
		if _, err := os.Stat(db); !os.IsNotExist(err) {
			t.Fatalf("%v created the file", args)
		}
	}
	missingDir := filepath.Join(t.TempDir(), "no", "such", "folder")
	if code, _, errOut := cli(t, testPassword+"\n", "users", "add", "a@example.com", "--password-stdin", "--db", filepath.Join(missingDir, "g.db")); code != 1 || !strings.Contains(errOut, "does not exist") {
		t.Errorf("users add into a missing folder: %d %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Dir(missingDir)); !os.IsNotExist(err) {
		t.Error("users add created the missing folder")
	}
	if code, _, errOut := cli(t, testPassword+"\n", "users", "add", "a@example.com", "--password-stdin", "--db", db); code != 0 {
		t.Fatalf("users add on a missing file: %d %q", code, errOut)
	}
}

// --help lists every command with one line each; --version prints the version.
func TestUsersAndSessionsHelp(t *testing.T) {
	code, out, _ := cli(t, "", "users", "--help")
	if code != 0 {
		t.Fatalf("users --help: exit %d", code)
	}
	for _, c := range usersCommands {
		if n := len(regexp.MustCompile(`(?m)^  `+regexp.QuoteMeta(c.name)+` .*\S`).FindAllString(out, -1)); n != 1 {
			t.Errorf("users --help lists %q %d times:\n%s", c.name, n, out)
		}
	}
	if code, out, _ := cli(t, "", "sessions", "--help"); code != 0 || !strings.Contains(out, "  list E") {
		t.Errorf("sessions --help: %d %q", code, out)
	}
	if code, out, _ := cli(t, "", "--version"); code != 0 || out != "gatehouse "+version+"\n" {
		t.Errorf("--version: %d %q", code, out)
	}
	if code, _, errOut := cli(t, "", "sessions", "kill", "a@example.com"); code != 2 || !strings.Contains(errOut, `unknown command "kill"; see gatehouse sessions --help`) {
		t.Errorf("sessions typo: %d %q", code, errOut)
	}
}

// The access log is on by default, one line per proxied request without the
// query; --access-log=false turns it off.
func TestAccessLogFlag(t *testing.T) {
	up, _ := echoUpstream(t)
	for _, on := range []bool{true, false} {
		db := filepath.Join(t.TempDir(), "gatehouse.db")
		addUser(t, db, "ann@example.com", testPassword)
		args := []string{"--upstream", up.URL}
		if !on {
			args = append(args, "--access-log=false")
		}
		g := startGatehouse(t, db, args...)
		c := newClient()
		login(t, c, g.URL, "ann@example.com", testPassword)
		get(t, c, g.URL+"/app/x?token=QUERY-SECRET")
		g.Stop() // flushes the batch
		logs := g.Logs.String()
		line := regexp.MustCompile(`(?m)^time=\S+ level=INFO msg=access method=GET path=/app/x status=200 bytes=\d+ duration_ms=[\d.]+ user_id=[0-9a-f]{32} request_id=[0-9a-f]{32} client_ip=127\.0\.0\.1$`)
		if got := line.MatchString(logs); got != on {
			t.Errorf("--access-log=%v: access line present %v:\n%s", on, got, logs)
		}
		if strings.Contains(logs, "QUERY-SECRET") {
			t.Errorf("the query reached the log")
		}
	}
}

// waitForMail returns the decoded text of the first mail file in dir that
// contains want, waiting up to 10 seconds for the queue to deliver it.
func waitForMail(t *testing.T, dir, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		files, _ := filepath.Glob(filepath.Join(dir, "*.eml"))
		for _, f := range files {
			var out bytes.Buffer
			if showMail(&out, f) == nil && strings.Contains(out.String(), want) {
				return out.String()
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no mail in %s contains %q (%d files)", dir, want, len(files))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
