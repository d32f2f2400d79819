package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// gatehouse is a whole server running in the test process on loopback ports.
type gatehouse struct {
	URL, AdminURL string
	DB            string
	Logs          *syncBuffer
	stop          context.CancelFunc
	done          chan error
}

// startGatehouse runs the real wiring (newServer, serve) with args added to
// the defaults, on free loopback ports, with a cheap argon2 cost.
func startGatehouse(t testing.TB, db string, args ...string) *gatehouse {
	t.Helper()
	return startGatehouseWith(t, db, nil, args...)
}

// startGatehouseWith is startGatehouse with a last say on the Config.
func startGatehouseWith(t testing.TB, db string, tune func(*Config), args ...string) *gatehouse {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	adminLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	all := append([]string{"--db", db, "--base-url", base, "--listen", ln.Addr().String(),
		"--admin-listen", adminLn.Addr().String(), "--mail-dir", filepath.Join(filepath.Dir(db), "mail"),
		"--shutdown-timeout", "5s"}, args...)
	cfg, err := parseServe(all, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Argon2Memory, cfg.Argon2Time = 64, 1
	if tune != nil {
		tune(&cfg)
	}
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := newServer(ctx, cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		cancel()
		ln.Close()
		adminLn.Close()
		t.Fatal(err)
	}
	g := &gatehouse{URL: base, AdminURL: "http://" + adminLn.Addr().String(), DB: db, Logs: logs, stop: cancel, done: make(chan error, 1)}
	go func() { g.done <- srv.serve(ctx, &listeners{main: ln, admin: adminLn}) }()
	t.Cleanup(g.Stop)
	return g
}

// Stop sends the equivalent of SIGTERM and waits for the drain to finish.
func (g *gatehouse) Stop() {
	if g.stop == nil {
		return
	}
	g.stop()
	g.stop = nil
	<-g.done
}

// addUser runs `gatehouse users add` against a stopped server's database.
func addUser(t *testing.T, db, email, password string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run([]string{"users", "add", "--db", db, "--email", email, "--password-stdin"}, strings.NewReader(password+"\n"), &out, &errOut, envOf(nil))
	if code != 0 {
		t.Fatalf("users add: exit %d: %s", code, errOut.String())
	}
}

// echoUpstream answers every request with what it received, as JSON.
func echoUpstream(t *testing.T) (*httptest.Server, *int64) {
	var hits int64
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"path": r.URL.Path, "header": r.Header})
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func newClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func login(t *testing.T, c *http.Client, base, email, password string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"email": email, "password": password})
	resp, err := c.Post(base+"/auth/login", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("login: %d %s", resp.StatusCode, b)
	}
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const testPassword = "correct horse battery staple"

func TestEndToEndSignInProxyRestartRevoke(t *testing.T) {
	up, _ := echoUpstream(t)
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	addUser(t, db, "Alice@Example.com", testPassword)

	g := startGatehouse(t, db, "--upstream", up.URL)
	c := newClient()
	if code, _ := get(t, c, g.URL+"/app"); code != http.StatusFound {
		t.Fatalf("unauthenticated GET /app = %d, want 302", code)
	}
	login(t, c, g.URL, "alice@example.com", testPassword)
	code, body := get(t, c, g.URL+"/app")
	if code != http.StatusOK || !strings.Contains(body, `"X-Forwarded-Email":["alice@example.com"]`) {
		t.Fatalf("signed-in GET /app = %d %s", code, body)
	}
	if strings.Contains(body, "gatehouse_session") {
		t.Error("the session cookie reached the upstream")
	}

	// Restart: the session survives. (Cookies are per host, not per port,
	// so the jar sends the cookie to the restarted server's new port.)
	g.Stop()
	g = startGatehouse(t, db, "--upstream", up.URL)
	if code, _ := get(t, c, g.URL+"/app"); code != http.StatusOK {
		t.Fatalf("after restart: GET /app = %d, want 200 (session kept)", code)
	}

	// Revocation by the subcommand takes effect on the very next request.
	g.Stop()
	var out, errOut bytes.Buffer
	if code := run([]string{"users", "revoke-sessions", "--db", db, "--email", "ALICE@example.com"}, nil, &out, &errOut, envOf(nil)); code != 0 || !strings.Contains(out.String(), "revoked 1 sessions") {
		t.Fatalf("revoke-sessions: %d %q %q", code, out.String(), errOut.String())
	}
	g = startGatehouse(t, db, "--upstream", up.URL)
	if code, _ := get(t, c, g.URL+"/app"); code != http.StatusFound {
		t.Fatalf("after revoke-sessions: GET /app = %d, want 302", code)
	}
}

func TestDatabaseLockedFailsFast(t *testing.T) {
	up, _ := echoUpstream(t)
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	startGatehouse(t, db, "--upstream", up.URL)
	for _, args := range [][]string{
		{"users", "list", "--db", db},
		{"--upstream", up.URL, "--db", db, "--listen", "127.0.0.1:0", "--admin-listen", ""},
	} {
		start := time.Now()
		var out, errOut bytes.Buffer
		code := run(args, strings.NewReader(""), &out, &errOut, envOf(nil))
		if code == 0 || !strings.Contains(errOut.String(), "locked by another process") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut.String())
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%v: took %v, want < 5s", args, d)
		}
	}
}

func TestAdminEndpoints(t *testing.T) {
	up, _ := echoUpstream(t)
	g := startGatehouse(t, filepath.Join(t.TempDir(), "g.db"), "--upstream", up.URL)
	c := newClient()
	get(t, c, g.URL+"/protected") // one unauthenticated request for the counters
	for path, want := range map[string]string{
		"/healthz": "ok",
		"/readyz":  "ready",
		"/metrics": "gatehouse_proxy_requests_total",
	} {
		code, body := get(t, c, g.AdminURL+path)
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s = %d %.200q, want 200 containing %q", path, code, body, want)
		}
	}
	_, metrics := get(t, c, g.AdminURL+"/metrics")
	for _, m := range []string{"gatehouse_session_lookup_seconds", "gatehouse_logins_total"} {
		if !strings.Contains(metrics, m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
}

func TestShutdownDrainsInFlightRequests(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		fmt.Fprint(w, "finished")
	}))
	defer up.Close()
	db := filepath.Join(t.TempDir(), "g.db")
	g := startGatehouse(t, db, "--upstream", up.URL, "--public-path", "/slow")
	result := make(chan string, 1)
	go func() {
		resp, err := http.Get(g.URL + "/slow")
		if err != nil {
			result <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		result <- string(b)
	}()
	<-started
	stopped := make(chan struct{})
	go func() { g.Stop(); close(stopped) }()
	time.Sleep(100 * time.Millisecond) // let Shutdown begin while the request is in flight
	close(release)
	if got := <-result; got != "finished" {
		t.Errorf("in-flight request during shutdown: %q", got)
	}
	<-stopped
	// The store was closed cleanly: the file opens again at once.
	var out, errOut bytes.Buffer
	if code := run([]string{"users", "list", "--db", db}, nil, &out, &errOut, envOf(nil)); code != 0 {
		t.Errorf("database not released after shutdown: %s", errOut.String())
	}
}
