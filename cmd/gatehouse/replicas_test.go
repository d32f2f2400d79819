//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/storage/postgres"
	"github.com/gatehouse-auth/gatehouse/storage/postgres/pgtest"
	"github.com/jackc/pgx/v5"
)

// pg is the PostgreSQL server of this test binary (tests skip without one).
var pg *pgtest.Server

func TestMain(m *testing.M) {
	code := pgtest.Main(m, &pg)
	builds.Cleanup()
	os.Exit(code)
}

// replicaProcess is one gatehouse process.
type replicaProcess struct {
	URL, Admin string
	cmd        *exec.Cmd
	exited     chan struct{} // closed once the process is gone
	mu         sync.Mutex
	logs       bytes.Buffer
}

func (r *replicaProcess) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs.Write(p)
}

func (r *replicaProcess) Logs() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs.String()
}

// startReplicas runs n gatehouse processes of bin on one database.
func startReplicas(t *testing.T, bin, db, upstream string, n int) []*replicaProcess {
	t.Helper()
	return startReplicasMail(t, bin, db, upstream, t.TempDir(), n)
}

// startReplicasMail is startReplicas with one --mail-dir for all, and
// extra flags for every replica.
func startReplicasMail(t *testing.T, bin, db, upstream, mailDir string, n int, extra ...string) []*replicaProcess {
	t.Helper()
	var rs []*replicaProcess
	for i := range n {
		addr, admin := freeLoopbackAddr(t), freeLoopbackAddr(t)
		r := &replicaProcess{URL: "http://" + addr, Admin: "http://" + admin, exited: make(chan struct{})}
		r.cmd = exec.Command(bin, append([]string{"--db", db, "--listen", addr, "--admin-listen", admin,
			"--base-url", r.URL, "--upstream", upstream, "--mail-dir", mailDir,
			"--shutdown-timeout", "5s"}, extra...)...)
		r.cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		r.cmd.Stdout, r.cmd.Stderr = r, r
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = r.cmd.Wait(); close(r.exited) }()
		t.Cleanup(func() {
			_ = r.cmd.Process.Signal(syscall.SIGTERM)
			<-r.exited
			if t.Failed() {
				t.Logf("replica %d logs:\n%s", i, r.Logs())
			}
		})
		rs = append(rs, r)
	}
	for i, r := range rs {
		ready := false
		for deadline := time.Now().Add(30 * time.Second); !ready && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			select {
			case <-r.exited:
				t.Fatalf("replica %d exited at start (%v):\n%s", i, r.cmd.ProcessState, r.Logs())
			default:
			}
			if res, err := http.Get(r.Admin + "/readyz"); err == nil {
				res.Body.Close()
				ready = res.StatusCode == http.StatusOK
			}
		}
		if !ready {
			t.Fatalf("replica %d never ready:\n%s", i, r.Logs())
		}
	}
	return rs
}

// TestThreeReplicasRevokeEverywhere: three gatehouse processes on one
// PostgreSQL database. A session revoked through one stops working on the
// other two within a second; with the notification connection of one
// replica cut, that replica still never serves a revoked session.
// (PG1)
func TestThreeReplicasRevokeEverywhere(t *testing.T) {
	db := pg.NewDatabase(t)
	bin := builds.Binary(t, ".")
	up, _ := echoUpstream(t)
	addUser(t, db, "alice@example.com", testPassword)
	mailDir := t.TempDir()
	rs := startReplicasMail(t, bin, db, up.URL, mailDir, 3)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	credentials := jsonBody(map[string]string{"email": "alice@example.com", "password": testPassword})
	signIn := func(via *replicaProcess) string {
		t.Helper()
		status, h, body := do(t, c, "POST", via.URL+"/auth/login", "application/json", credentials)
		if status != http.StatusOK {
			t.Fatalf("login: %d %s", status, body)
		}
		return sessionCookieOf(t, h).Value
	}
	status := func(r *replicaProcess, id string) int {
		t.Helper()
		code, _, _ := do(t, c, "GET", r.URL+"/app", "", "", "Cookie", "gatehouse_session="+id)
		return code
	}
	// signedInEverywhere signs in and makes every replica cache the session.
	signedInEverywhere := func() string {
		t.Helper()
		id := signIn(rs[0])
		for i, r := range rs {
			for range 3 {
				if code := status(r, id); code != http.StatusOK {
					t.Fatalf("replica %d: new session answered %d", i, code)
				}
			}
		}
		return id
	}
	// goneEverywhere fails unless every replica refuses id within a second.
	goneEverywhere := func(what string, id string) {
		t.Helper()
		start := time.Now()
		for i, r := range rs {
			for status(r, id) == http.StatusOK {
				if time.Since(start) > time.Second {
					t.Fatalf("%s: replica %d still serves the session after 1s", what, i)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		t.Logf("%s: refused everywhere after %v", what, time.Since(start))
	}

	for i, r := range rs {
		deadline := time.Now().Add(10 * time.Second)
		for metric(t, r, "gatehouse_session_cache_live") != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("replica %d: session cache never live", i)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	id := signedInEverywhere()
	for i, r := range rs {
		// The sessions were checked from memory: the cache is in use.
		if hits := metric(t, r, `gatehouse_session_cache_lookups_total{result="hit"}`); hits < 1 {
			t.Fatalf("replica %d: %v cache hits after repeated requests, want some", i, hits)
		}
	}
	if code, _, _ := do(t, c, "POST", rs[1].URL+"/auth/logout", "", "", "Cookie", "gatehouse_session="+id); code != http.StatusNoContent {
		t.Fatalf("logout: %d", code)
	}
	if code := status(rs[1], id); code == http.StatusOK {
		t.Fatal("logout: the replica that made it still serves the session")
	}
	goneEverywhere("logout through replica 1", id)

	id = signedInEverywhere()
	var out, errOut bytes.Buffer
	if code := run([]string{"users", "revoke-sessions", "--db", db, "--email", "alice@example.com"}, nil, &out, &errOut, envOf(nil)); code != 0 {
		t.Fatalf("users revoke-sessions: exit %d: %s", code, errOut.String())
	}
	goneEverywhere("users revoke-sessions", id)

	// users disable on the database directly (no admin socket with a
	// postgres:// --db): revoked everywhere and no sign-in; enable lets in again.
	id = signedInEverywhere()
	cli := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run(append(args, "--db", db), nil, &out, &errOut, envOf(nil)); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut.String())
		}
		return out.String()
	}
	if list := cli("sessions", "list", "alice@example.com"); strings.Count(list, "\n") < 2 {
		t.Fatalf("sessions list on the database: %q, want a header and the session", list)
	}
	cli("users", "disable", "alice@example.com")
	goneEverywhere("users disable", id)
	if code, _, body := do(t, c, "POST", rs[2].URL+"/auth/login", "application/json", credentials); code != http.StatusForbidden {
		t.Fatalf("login of a disabled user on another replica: %d %s, want 403", code, body)
	}
	cli("users", "enable", "alice@example.com")

	// Cut replica 2's notification connection, then revoke through replica 0.
	id = signedInEverywhere()
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var cut int
	err = conn.QueryRow(t.Context(), `SELECT count(*) FROM (SELECT pg_terminate_backend(pid, 5000)
		FROM pg_stat_activity WHERE application_name = $1) x`,
		fmt.Sprintf("%s-%d", postgres.ListenApplicationName, rs[2].cmd.Process.Pid)).Scan(&cut)
	if err != nil || cut != 1 {
		t.Fatalf("terminated %d listener backends of replica 2 (%v), want 1", cut, err)
	}
	if code, _, _ := do(t, c, "POST", rs[0].URL+"/auth/logout", "", "", "Cookie", "gatehouse_session="+id); code != http.StatusNoContent {
		t.Fatalf("logout: %d", code)
	}
	for range 20 {
		if code := status(rs[2], id); code == http.StatusOK {
			t.Fatal("replica 2, notification connection cut: served a revoked session")
		}
	}
	goneEverywhere("logout while replica 2's listener was cut", id)
	if !strings.Contains(rs[2].Logs(), "notification connection lost") {
		t.Errorf("replica 2 did not log the lost notification connection:\n%s", rs[2].Logs())
	}
	// Back to normal: replica 2 reconnects and hears revocations again.
	id = signedInEverywhere()
	if code, _, _ := do(t, c, "POST", rs[0].URL+"/auth/logout", "", "", "Cookie", "gatehouse_session="+id); code != http.StatusNoContent {
		t.Fatalf("logout: %d", code)
	}
	goneEverywhere("logout after replica 2 reconnected", id)

	// Password reset: asked on replica 1, mailed by whichever replica's
	// queue claims the job, completed on replica 2.
	id = signedInEverywhere()
	if code, _, body := do(t, c, "POST", rs[1].URL+"/auth/forgot", "application/json", jsonBody(map[string]string{"email": "alice@example.com"})); code != http.StatusAccepted {
		t.Fatalf("forgot: %d %s", code, body)
	}
	token := waitForResetToken(t, mailDir)
	newPassword := testPassword + " but longer"
	if code, _, body := do(t, c, "POST", rs[2].URL+"/auth/reset", "application/json", jsonBody(map[string]string{"token": token, "password": newPassword})); code != http.StatusOK {
		t.Fatalf("reset: %d %s", code, body)
	}
	goneEverywhere("password reset through replica 2", id)
	if n := countResetMails(t, mailDir); n != 1 {
		t.Errorf("%d reset mails for one request: the replicas' queues both sent it", n)
	}
}

// waitForResetToken returns the token of the reset link mailed into dir.
func waitForResetToken(t *testing.T, dir string) string {
	t.Helper()
	link := regexp.MustCompile(`/auth/reset\?token=([A-Za-z0-9_-]+)`)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		files, _ := filepath.Glob(filepath.Join(dir, "*.eml"))
		for _, f := range files {
			raw, _ := os.ReadFile(f)
			text := strings.ReplaceAll(strings.ReplaceAll(string(raw), "=\r\n", ""), "=3D", "=")
			if m := link.FindStringSubmatch(text); m != nil {
				return m[1]
			}
		}
	}
	t.Fatalf("no reset mail arrived in %s", dir)
	return ""
}

// countResetMails counts the mails in dir that carry a reset link.
func countResetMails(t *testing.T, dir string) int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.eml"))
	n := 0
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		if strings.Contains(strings.ReplaceAll(string(raw), "=\r\n", ""), "/auth/reset?token") {
			n++
		}
	}
	return n
}

// TestThreeReplicasShareThrottles: failed sign-ins of one account spread
// over three replicas count together: after 10 (the floor), the next one
// is refused as throttled, on any replica.
func TestThreeReplicasShareThrottles(t *testing.T) {
	db := pg.NewDatabase(t)
	bin := builds.Binary(t, ".")
	up, _ := echoUpstream(t)
	addUser(t, db, "alice@example.com", testPassword)
	rs := startReplicas(t, bin, db, up.URL, 3)
	wrong := jsonBody(map[string]string{"email": "alice@example.com", "password": "not the password at all"})
	for i := range 10 {
		if code, _, body := do(t, http.DefaultClient, "POST", rs[i%3].URL+"/auth/login", "application/json", wrong); code != http.StatusUnauthorized {
			t.Fatalf("failed login %d on replica %d: %d %s", i+1, i%3, code, body)
		}
	}
	for i, r := range rs {
		if code, _, body := do(t, http.DefaultClient, "POST", r.URL+"/auth/login", "application/json", wrong); code != http.StatusTooManyRequests {
			t.Fatalf("11th failed login on replica %d: %d %s, want 429: the replicas count apart", i, code, body)
		}
	}
}

// A bad or unreachable --db stops the start with one line naming --db and
// without the password.
func TestBadDatabaseURL(t *testing.T) {
	for _, tc := range []struct {
		name string
		db   string
		code int
	}{
		{"unparsable", "postgres://alice:pw-s3cret@host:notaport/db", 2},
		{"other scheme", "mysql://alice:pw-s3cret@host/db", 2},
		{"unreachable", "postgres://alice:pw-s3cret@/gatehouse?host=/nonexistent-dir&connect_timeout=2", 1},
		{"password parameter", "postgresql:///gatehouse?host=/nonexistent-dir&password=pw-s3cret", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run([]string{"--db", tc.db, "--upstream", "http://127.0.0.1:1", "--base-url", "http://127.0.0.1:2",
				"--listen", "127.0.0.1:0", "--admin-listen", ""}, nil, &out, &errOut, envOf(nil))
			msg := errOut.String()
			if code != tc.code || !strings.Contains(msg, "--db") || strings.Count(msg, "\n") != 1 || strings.Contains(msg, "pw-s3cret") {
				t.Fatalf("exit %d (want %d), stderr %q: want one line naming --db, no password", code, tc.code, msg)
			}
		})
	}
}

// metric returns the value of one sample on the replica's /metrics.
func metric(t *testing.T, r *replicaProcess, sample string) float64 {
	t.Helper()
	_, _, body := do(t, http.DefaultClient, "GET", r.Admin+"/metrics", "", "")
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err == nil {
				return f
			}
		}
	}
	t.Fatalf("no sample %s in /metrics", sample)
	return 0
}

// TestReplicasShareOneSigningKey: three replicas starting together on an
// empty database each make sure a signing key exists; compare-and-add lets
// exactly one key in, and every replica publishes that same key set.
func TestReplicasShareOneSigningKey(t *testing.T) {
	db := pg.NewDatabase(t)
	bin := builds.Binary(t, ".")
	up, _ := echoUpstream(t)
	rs := startReplicas(t, bin, db, up.URL, 3)
	var first string
	for i, r := range rs {
		code, _, body := do(t, http.DefaultClient, "GET", r.URL+"/auth/.well-known/jwks.json", "", "")
		if code != http.StatusOK {
			t.Fatalf("replica %d: JWKS answered %d", i, code)
		}
		var set struct {
			Keys []struct {
				Kid string `json:"kid"`
			} `json:"keys"`
		}
		if err := json.Unmarshal([]byte(body), &set); err != nil || len(set.Keys) != 1 {
			t.Fatalf("replica %d: JWKS %s (%v), want exactly one key", i, body, err)
		}
		if i == 0 {
			first = set.Keys[0].Kid
		} else if set.Keys[0].Kid != first {
			t.Fatalf("replica %d publishes key %s, replica 0 key %s: the replicas sign with different keys", i, set.Keys[0].Kid, first)
		}
	}
}

// TestPostgresSignInUpgradesWeakerHash: a password hashed with weaker
// parameters than the server's is re-hashed at sign-in; on PostgreSQL the
// upgrade keeps the credential epoch, so the sign-in still gets its session.
func TestPostgresSignInUpgradesWeakerHash(t *testing.T) {
	db := pg.NewDatabase(t)
	up, _ := echoUpstream(t)
	addUser(t, db, "alice@example.com", testPassword) // DefaultHashParams
	// Stronger in passes and no weaker in memory: an upgrade never lowers either.
	g := startGatehouseWith(t, db, func(c *Config) {
		c.Argon2Memory, c.Argon2Time = password.DefaultHashParams.Memory, password.DefaultHashParams.Time+1
	}, "--upstream", up.URL)
	c := newClient()
	login(t, c, g.URL, "alice@example.com", testPassword)
	if code, body := get(t, c, g.URL+"/app"); code != http.StatusOK {
		t.Fatalf("signed in, then /app: %d %s", code, body)
	}
	s, err := postgres.Open(t.Context(), db, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	u, err := s.UserByEmail(t.Context(), "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("t=%d", password.DefaultHashParams.Time+1); !strings.Contains(u.PasswordHash, want) {
		t.Fatalf("hash after sign-in %q, want the server's parameters (%s)", u.PasswordHash, want)
	}
	if u.Epoch != 0 {
		t.Fatalf("the upgrade bumped the credential epoch to %d", u.Epoch)
	}
}
