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
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
)

// syncBuffer is the shared concurrency-safe log sink.
type syncBuffer = webtest.LogBuffer

// gatehouse is a whole server running in the test process on loopback ports.
type gatehouse struct {
	URL, AdminURL string
	DB            string
	Logs          *syncBuffer
	srv           *server
	stop          context.CancelFunc
	done          chan error
	Err           error // what serve returned, after Stop
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
	return startGatehouseOn(t, listenLoopback(t), db, tune, args...)
}

// listenLoopback opens a listener on a free loopback port, for a test that
// needs Gatehouse's address (its base URL) before Gatehouse starts.
func listenLoopback(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// startGatehouseOn is startGatehouseWith on a listener the caller opened;
// the base URL is http:// and its address.
func startGatehouseOn(t testing.TB, ln net.Listener, db string, tune func(*Config), args ...string) *gatehouse {
	t.Helper()
	adminLn := listenLoopback(t)
	base := "http://" + ln.Addr().String()
	all := append([]string{"--db", db, "--base-url", base, "--listen", ln.Addr().String(),
		"--admin-listen", adminLn.Addr().String(), "--mail-dir", filepath.Join(filepath.Dir(db), "mail"),
		"--shutdown-timeout", "5s"}, args...)
	cfg, err := parseServe(all, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Argon2Memory, cfg.Argon2Time = 64, 1
	logs := &syncBuffer{}
	cfg.LogOutput = logs // the access log joins the other lines
	if tune != nil {
		tune(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := newServer(ctx, cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		cancel()
		ln.Close()
		adminLn.Close()
		t.Fatal(err)
	}
	g := &gatehouse{URL: base, AdminURL: "http://" + adminLn.Addr().String(), DB: db, Logs: logs, srv: srv, stop: cancel, done: make(chan error, 1)}
	ls := &listeners{main: ln, admin: adminLn}
	if cfg.AdminSocket != "" {
		if ls.socket, err = listenAdminSocket(cfg.AdminSocket); err != nil {
			cancel()
			srv.close()
			ln.Close()
			adminLn.Close()
			t.Fatal(err)
		}
	}
	go func() { g.done <- srv.serve(ctx, ls) }()
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
	g.Err = <-g.done
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

// A database held by a running server: a subcommand and a second server
// fail with a message saying so, and the second server opens no port. The
// wait is bounded by lockTimeout (checked below the contract's 5 s); the
// watchdog only turns a hang into a failure.
func TestDatabaseLockedFailsFast(t *testing.T) {
	if lockTimeout >= 5*time.Second {
		t.Fatalf("lockTimeout %v: the contract wants a locked database reported within 5 s", lockTimeout)
	}
	up, _ := echoUpstream(t)
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	startGatehouse(t, db, "--upstream", up.URL)
	// Ports the second server would take: held here, so that trying to
	// listen would fail with "address already in use" instead.
	held, heldAdmin := listenLoopback(t), listenLoopback(t)
	defer held.Close()
	defer heldAdmin.Close()
	// The commands are kept off the server's admin socket (which would
	// answer them): this is what a command meets without one.
	for _, args := range [][]string{
		{"users", "list", "--db", db, "--admin-socket="},
		{"users", "revoke-sessions", "--email", "a@example.com", "--db", db, "--admin-socket="},
		{"users", "add", "--email", "a@example.com", "--password-stdin", "--db", db, "--admin-socket="},
		{"--upstream", up.URL, "--db", db, "--listen", held.Addr().String(), "--admin-listen", heldAdmin.Addr().String()},
	} {
		type result struct {
			code           int
			stdout, stderr string
		}
		done := make(chan result, 1)
		go func() {
			var out, errOut bytes.Buffer
			code := run(args, strings.NewReader("a long enough passphrase\n"), &out, &errOut, envOf(nil))
			done <- result{code, out.String(), errOut.String()}
		}()
		var res result
		select {
		case res = <-done:
		case <-time.After(time.Minute):
			t.Fatalf("%v: still waiting for the locked database after a minute", args)
		}
		if res.code == 0 || !strings.Contains(res.stderr, "locked by another process (waited "+lockTimeout.String()) {
			t.Errorf("%v: exit %d, stderr %q", args, res.code, res.stderr)
		}
		if lines := strings.Split(strings.TrimSpace(res.stderr), "\n"); len(lines) != 1 {
			t.Errorf("%v: stderr has %d lines: %q", args, len(lines), res.stderr)
		}
		if strings.Contains(res.stderr, "address already in use") {
			t.Errorf("%v: the second server tried to listen: %q", args, res.stderr)
		}
	}
}

// The admin listener: liveness, readiness that follows the store, and the
// metrics the issue names, with values that follow the traffic.
func TestAdminEndpoints(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/boom" {
			panic(http.ErrAbortHandler) // the upstream drops the connection: 502
		}
		fmt.Fprint(w, "ok")
	}))
	defer up.Close()
	db := filepath.Join(t.TempDir(), "g.db")
	addUser(t, db, "alice@example.com", testPassword)
	g := startGatehouse(t, db, "--upstream", up.URL)
	c := newClient()
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready"} {
		if code, body := get(t, c, g.AdminURL+path); code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s = %d %q, want 200 %q", path, code, body, want)
		}
	}

	get(t, c, g.URL+"/app") // redirected
	if res, err := c.Post(g.URL+"/app", "text/plain", strings.NewReader("x")); err == nil {
		res.Body.Close() // unauthenticated
	}
	body, _ := json.Marshal(map[string]string{"email": "alice@example.com", "password": "not the password"})
	if res, err := c.Post(g.URL+"/auth/login", "application/json", bytes.NewReader(body)); err == nil {
		res.Body.Close() // a failed login
	}
	login(t, c, g.URL, "alice@example.com", testPassword)
	get(t, c, g.URL+"/app")  // forwarded
	get(t, c, g.URL+"/boom") // error
	_, metrics := get(t, c, g.AdminURL+"/metrics")
	for _, want := range []string{
		`gatehouse_proxy_requests_total{outcome="redirected"} 1`,
		`gatehouse_proxy_requests_total{outcome="unauthenticated"} 1`,
		`gatehouse_proxy_requests_total{outcome="forwarded"} 1`,
		`gatehouse_proxy_requests_total{outcome="error"} 1`,
		`gatehouse_session_lookup_seconds_count 2`,
		`gatehouse_logins_total{result="ok"} 1`,
		`gatehouse_logins_total{result="failed"} 1`,
		`gatehouse_build_info{goversion="` + runtime.Version() + `",version="` + version + `"} 1`,
		`gatehouse_http_request_duration_seconds_count{code="3xx",outcome="redirected"} 1`,
		`gatehouse_http_request_duration_seconds_count{code="4xx",outcome="unauthenticated"} 1`,
		`gatehouse_http_request_duration_seconds_count{code="2xx",outcome="forwarded"} 1`,
		`gatehouse_http_request_duration_seconds_count{code="5xx",outcome="error"} 1`,
		`gatehouse_http_request_duration_seconds_count{code="4xx",outcome="auth"} 1`,
		`gatehouse_http_request_duration_seconds_count{code="2xx",outcome="auth"} 1`,
		`gatehouse_http_requests_in_flight 0`, // /metrics itself is served by the admin port
	} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if !strings.Contains(metrics, "\ngo_goroutines ") {
		t.Error("/metrics lacks the Go runtime metrics")
	}

	// Readiness follows the store: a closed database is not ready.
	if err := g.srv.store.Close(); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, c, g.AdminURL+"/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz with the store closed = %d, want 503", code)
	}
	if code, _ := get(t, c, g.AdminURL+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz with the store closed = %d, want 200 (the process is alive)", code)
	}
	if code, _ := get(t, c, g.URL+"/app"); code != http.StatusServiceUnavailable {
		t.Errorf("a signed-in request with the store closed = %d, want 503 (SS9)", code)
	}
}

// SIGTERM (the canceled context) stops taking new connections, lets the
// request in flight finish, and closes the database.
func TestShutdownDrainsInFlightRequests(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		fmt.Fprint(w, "finished")
	}))
	defer up.Close()
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free() // before up.Close, which waits for the handler
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
	// Shutdown has begun once the listener refuses new connections; the
	// request in flight is still held by the upstream.
	waitRefused(t, strings.TrimPrefix(g.URL, "http://"))
	select {
	case <-stopped:
		t.Fatal("shutdown finished while a request was in flight")
	default:
	}
	// While draining, the admin listener still answers, and not ready, so
	// that a load balancer sends no new traffic.
	if code, _ := get(t, newClient(), g.AdminURL+"/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz while draining = %d, want 503", code)
	}
	free()
	if got := <-result; got != "finished" {
		t.Errorf("in-flight request during shutdown: %q", got)
	}
	<-stopped
	if !strings.Contains(g.Logs.String(), "gatehouse stopped") {
		t.Errorf("no stop line in the log:\n%s", g.Logs.String())
	}
	if g.Err != nil {
		t.Errorf("serve after a complete drain returned %v, want nil (exit 0)", g.Err)
	}
	// The store was closed cleanly: the file opens again at once.
	var out, errOut bytes.Buffer
	if code := run([]string{"users", "list", "--db", db}, nil, &out, &errOut, envOf(nil)); code != 0 {
		t.Errorf("database not released after shutdown: %s", errOut.String())
	}
}

// The drain has a deadline: a request that never ends is cut when
// --shutdown-timeout has passed, and the database is still closed.
func TestShutdownDeadline(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer up.Close()
	defer close(release)
	db := filepath.Join(t.TempDir(), "g.db")
	g := startGatehouse(t, db, "--upstream", up.URL, "--public-path", "/stuck", "--shutdown-timeout", "200ms")
	failed := make(chan error, 1)
	go func() {
		resp, err := http.Get(g.URL + "/stuck")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		failed <- err
	}()
	<-started
	stopped := make(chan struct{})
	go func() { g.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(time.Minute): // watchdog: without a deadline this never ends
		t.Fatal("shutdown did not end with a request stuck in flight")
	}
	if err := <-failed; err == nil {
		t.Error("the stuck request completed; want its connection closed at the deadline")
	}
	if !strings.Contains(g.Logs.String(), "shutdown deadline passed") {
		t.Errorf("no deadline line in the log:\n%s", g.Logs.String())
	}
	// Issue 10, item 6: a cut drain is not a clean stop (run exits 1).
	if g.Err == nil || !strings.Contains(g.Err.Error(), "--shutdown-timeout") {
		t.Errorf("serve after a cut drain returned %v, want an error naming --shutdown-timeout", g.Err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"users", "list", "--db", db}, nil, &out, &errOut, envOf(nil)); code != 0 {
		t.Errorf("database not released after a cut shutdown: %s", errOut.String())
	}
}

// waitRefused waits until addr refuses TCP connections.
func waitRefused(t *testing.T, addr string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		conn.Close()
	}
	t.Fatalf("%s still accepts connections", addr)
}

// serve returns only once every port it served is closed, the admin
// socket's file included, however early the stop comes: a stop right after
// the start used to return while a listener's goroutine had not yet
// reached Serve, so the port went on accepting connections that were then
// reset (a `users` command took the socket for a live server and failed).
func TestStopClosesEveryListener(t *testing.T) {
	up, _ := echoUpstream(t)
	for i := range 10 {
		db := filepath.Join(t.TempDir(), "g.db")
		g := startGatehouse(t, db, "--upstream", up.URL)
		g.Stop()
		socket := defaultAdminSocket(db)
		if _, err := os.Lstat(socket); err == nil {
			t.Errorf("stop %d: the admin socket %s is still there", i, socket)
		}
		for _, addr := range []string{strings.TrimPrefix(g.URL, "http://"), strings.TrimPrefix(g.AdminURL, "http://")} {
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				t.Errorf("stop %d: %s still accepts connections", i, addr)
			}
		}
	}
}
