package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
)

// Integration tests of forward-auth against the real nginx and Caddy, each
// run on examples/forward-auth's own config file, fronting a small app with
// Gatehouse as its auth service. Without the binary they skip loudly.

// The addresses the example configs are written for; the tests put free
// ports in their place.
const (
	exampleFrontAddr = "127.0.0.1:8000"
	exampleGateAddr  = "127.0.0.1:4180"
	exampleAppAddr   = "127.0.0.1:3000"
)

// freeAddr returns a loopback address with a port free at the moment.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// exampleConfig reads an example config and puts the test's addresses in.
func exampleConfig(t *testing.T, name, front, gate, app string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "forward-auth", name))
	if err != nil {
		t.Fatal(err)
	}
	conf := string(b)
	for _, addr := range []string{exampleFrontAddr, exampleGateAddr, exampleAppAddr} {
		if !strings.Contains(conf, addr) {
			t.Fatalf("%s does not mention %s", name, addr)
		}
	}
	r := strings.NewReplacer(exampleFrontAddr, front, exampleGateAddr, gate, exampleAppAddr, app)
	return r.Replace(conf)
}

// startFrontedGatehouse starts the app and Gatehouse with the flags the
// example configs name, its base URL being the front proxy's address with
// scheme (http, or https for the __Host- cookie name).
func startFrontedGatehouse(t *testing.T, front, scheme string, extra ...string) (*gatehouse, string, *int64) {
	t.Helper()
	up, hits := echoUpstream(t)
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	addUser(t, db, "alice@example.com", testPassword)
	g := startGatehouse(t, db, append([]string{"--upstream", up.URL, "--base-url", scheme + "://" + front,
		"--forward-auth-trusted", "127.0.0.1/32", "--trusted-proxies", "127.0.0.1/32", "--public-path", "/static"}, extra...)...)
	return g, up.URL, hits
}

// startFront runs the real nginx or caddy on its example config in front of
// Gatehouse (gate) and the app until the test ends; errorLog reads nginx's
// error log (empty for caddy).
func startFront(t *testing.T, kind, front string, g *gatehouse, app string) (errorLog func() string) {
	t.Helper()
	gateAddr, appAddr := strings.TrimPrefix(g.URL, "http://"), strings.TrimPrefix(app, "http://")
	dir := t.TempDir()
	write := func(name string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(exampleConfig(t, name, front, gateAddr, appAddr)), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	switch kind {
	case "nginx":
		nginx := lookBinary(t, "/usr/sbin/nginx", "nginx")
		if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
			t.Fatal(err)
		}
		startProcess(t, front, filepath.Join(dir, "nginx.out"), nginx, "-p", dir, "-c", write("nginx.conf"),
			"-g", fmt.Sprintf("daemon off; pid %s/nginx.pid; error_log %s/error.log;", dir, dir))
	case "caddy":
		caddy := lookBinary(t, "/usr/bin/caddy", "caddy")
		t.Setenv("HOME", dir) // Caddy keeps its data under $HOME/.local/share
		t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
		t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
		startProcess(t, front, filepath.Join(dir, "caddy.out"), caddy, "run", "--config", write("Caddyfile"), "--adapter", "caddyfile")
	default:
		t.Fatalf("unknown front %q", kind)
	}
	return func() string { b, _ := os.ReadFile(filepath.Join(dir, "error.log")); return string(b) }
}

func waitForPort(t *testing.T, addr string, logs func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s: %s", addr, logs())
}

// startProcess runs a server process until the test ends.
func startProcess(t *testing.T, addr string, logPath string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logFile.Close()
	})
	waitForPort(t, addr, func() string { b, _ := os.ReadFile(logPath); return string(b) })
}

func lookBinary(t *testing.T, path, name string) string {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	webtest.Missing(t, "%s not installed (Debian package %s); forward-auth integration untested", name, name)
	return ""
}

func TestNginxForwardAuth(t *testing.T) {
	front := freeAddr(t)
	g, app, hits := startFrontedGatehouse(t, front, "http")
	startFront(t, "nginx", front, g, app)
	checkFronted(t, "http://"+front, g, hits, "X-Original-URL")
}

func TestCaddyForwardAuth(t *testing.T) {
	front := freeAddr(t)
	g, app, hits := startFrontedGatehouse(t, front, "http")
	startFront(t, "caddy", front, g, app)
	checkFronted(t, "http://"+front, g, hits, "X-Forwarded-Uri")
}

// Route rules behind the real nginx and Caddy: a public /assets/, a denied
// /private/, and attack strings of the peers' advisories sent verbatim to
// the front; none reaches the app without a session.
func TestNginxForwardAuthRouteRules(t *testing.T) { checkFrontedRules(t, "nginx") }
func TestCaddyForwardAuthRouteRules(t *testing.T) { checkFrontedRules(t, "caddy") }

func checkFrontedRules(t *testing.T, kind string) {
	config := filepath.Join(t.TempDir(), "gatehouse.yaml")
	if err := os.WriteFile(config, []byte("routes:\n  - path: /assets/\n    allow: public\n  - path: /private/\n    allow: deny\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	front := freeAddr(t)
	g, app, hits := startFrontedGatehouse(t, front, "http", "--config", config)
	startFront(t, kind, front, g, app)
	send := func(target string) int {
		t.Helper()
		conn, err := net.Dial("tcp", front)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\nConnection: close\r\n\r\n", target, front)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := send("/assets/app.css"); code != http.StatusOK {
		t.Fatalf("public /assets/: %d", code)
	}
	if code := send("/private/x"); code != http.StatusForbidden {
		t.Errorf("denied /private/x: %d, want 403", code)
	}
	before := *hits
	for _, target := range []string{
		"/private?x=/assets/", "/assets/..%2fprivate/x", "/assets/%2e%2e/private/x", "/assets/..;/private/x",
		"/assets/..%5cprivate/x", "//private/x", "/PRIVATE/x", "/private;x/y", "/assets/%252e%252e/private/",
		"/assets/x%00/../../private/", "/assets/../app",
	} {
		if code := send(target); code == http.StatusOK {
			t.Errorf("%s through %s without a session: 200", target, kind)
		}
	}
	if *hits != before {
		t.Errorf("the app was reached %d times by attack strings", *hits-before)
	}
}

// checkFronted runs the same story through a fronting proxy: a signed-out
// browser is sent to sign in and back, an API call gets 401, a signed-in
// request reaches the app with the identity headers and a valid assertion,
// forged identity and routing headers change nothing, and an untrusted peer
// may not ask Gatehouse directly.
func checkFronted(t *testing.T, front string, g *gatehouse, hits *int64, routingHeader string) {
	t.Helper()
	c := newClient()
	do := func(method, target string, header ...string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header[header[i]] = append(req.Header[header[i]], header[i+1])
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	seen := func(res *http.Response) http.Header {
		t.Helper()
		var s struct {
			Path   string
			Header http.Header
		}
		if err := json.NewDecoder(res.Body).Decode(&s); err != nil {
			t.Fatalf("not the app's answer: %v", err)
		}
		return s.Header
	}

	// 1. Signed out: a browser is sent to sign in, with the absolute URL to
	// come back to; an API call gets 401; the app sees neither.
	res := do("GET", front+"/app/page?x=1", "Accept", "text/html")
	wantLogin := front + "/auth/login?rd=" + url.QueryEscape(front+"/app/page?x=1")
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != wantLogin {
		t.Fatalf("signed-out browser: %d to %q, want 302 to %q", res.StatusCode, res.Header.Get("Location"), wantLogin)
	}
	if res := do("GET", front+"/app/page", "Accept", "application/json"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("signed-out API call: %d, want 401", res.StatusCode)
	}
	// A spoofed routing header naming a public path changes nothing.
	if res := do("GET", front+"/app/page", routingHeader, front+"/static/x", "X-Original-Uri", "/static/x", "X-Forwarded-Uri", "/static/x"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("spoofed %s from the client: %d, want 401", routingHeader, res.StatusCode)
	}
	if *hits != 0 {
		t.Fatalf("the app was reached %d times without a session", *hits)
	}
	// Public path without a session: served, forged identity headers gone.
	pub := seen(do("GET", front+"/static/app.css", "X-Forwarded-User", "admin", "X_Forwarded_User", "admin", "X-Gatehouse-Jwt-Assertion", "forged"))
	for name, values := range pub {
		if (headerEqual(name, "x-forwarded-user") || headerEqual(name, "x-gatehouse-jwt-assertion")) && strings.Join(values, "") != "" {
			t.Fatalf("forged %s reached the app on a public path: %q", name, values)
		}
	}

	// 2. Sign in through the front with the form the sign-in page posts:
	// back to where the browser wanted to go.
	form := url.Values{"email": {"alice@example.com"}, "password": {testPassword}, "rd": {front + "/app/page?x=1"}}
	req, _ := http.NewRequest("POST", front+"/auth/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", front)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != front+"/app/page?x=1" {
		t.Fatalf("sign-in: %d to %q, want 303 back to the app", res.StatusCode, res.Header.Get("Location"))
	}

	// 3. Signed in: the app gets the identity, forged copies are replaced;
	// it gets the client's other cookies but not the session cookie (SS8).
	res = do("GET", front+"/app/page?x=1", "Accept", "text/html", "Cookie", "theme=dark; lang=en",
		"X-Forwarded-User", "admin", "X-Forwarded-Email", "admin@example.com", "X-Gatehouse-Jwt-Assertion", "forged")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("signed in: %d", res.StatusCode)
	}
	h := seen(res)
	if cookies := strings.Join(h.Values("Cookie"), "; "); strings.Contains(cookies, "gatehouse_session") ||
		!strings.Contains(cookies, "theme=dark") || !strings.Contains(cookies, "lang=en") {
		t.Fatalf("the app got Cookie %q, want theme=dark and lang=en without the session cookie", cookies)
	}
	// The session cookie first, and a cookie whose name only ends like it.
	frontURL, _ := url.Parse(front)
	var session string
	for _, ck := range c.Jar.Cookies(frontURL) {
		if ck.Name == "gatehouse_session" {
			session = ck.String()
		}
	}
	req, _ = http.NewRequest("GET", front+"/app/page", nil)
	req.Header.Set("Cookie", session+"; my_gatehouse_session=keep; theme=dark")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if got := strings.Join(seen(res).Values("Cookie"), "; "); got != "my_gatehouse_session=keep; theme=dark" {
		t.Fatalf("the app got Cookie %q, want my_gatehouse_session=keep; theme=dark", got)
	}
	if h.Get("X-Forwarded-Email") != "alice@example.com" || len(h.Values("X-Forwarded-User")) != 1 || h.Get("X-Forwarded-User") == "admin" {
		t.Fatalf("identity at the app: %v", h)
	}
	tokens := h.Values("X-Gatehouse-Jwt-Assertion")
	if len(tokens) != 1 {
		t.Fatalf("the app got %d assertions", len(tokens))
	}
	set := fetchJWKS(t, front+"/auth/.well-known/jwks.json")
	_, claims := verifyWith(t, set, tokens[0], front, front)
	if claims["email"] != "alice@example.com" || claims["sub"] != h.Get("X-Forwarded-User") {
		t.Fatalf("assertion claims %v", claims)
	}

	// 4. The check endpoints are not reachable through the front, and
	// Gatehouse refuses them to an untrusted peer (here 127.0.0.2).
	if res := do("GET", front+"/auth/check/auth-request", "X-Original-URL", front+"/static/x", "X-Original-Method", "GET"); res.StatusCode != http.StatusNotFound {
		t.Fatalf("check endpoint through the front: %d, want 404", res.StatusCode)
	}
	direct := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext}}
	for _, tc := range []struct{ path, header, value string }{
		{"/auth/check/auth-request", "X-Original-URL", front + "/static/x"},
		{"/auth/check/forward-auth", "X-Forwarded-Uri", "/static/x"},
	} {
		req, _ := http.NewRequestWithContext(context.Background(), "GET", g.URL+tc.path, nil)
		req.Header.Set(tc.header, tc.value)
		req.Header.Set("X-Original-Method", "GET")
		req.Header.Set("X-Forwarded-Method", "GET")
		req.Header.Set("X-Forwarded-Proto", "http")
		req.Header.Set("X-Forwarded-Host", strings.TrimPrefix(front, "http://"))
		res, err := direct.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("%s from an untrusted peer: %d, want 403", tc.path, res.StatusCode)
		}
	}
}

// headerEqual compares header names ignoring case and reading "_" as "-".
