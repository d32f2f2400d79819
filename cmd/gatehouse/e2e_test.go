package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
)

// boltTxID reads the id of the last committed transaction from the two
// meta pages of a bbolt file, without opening it (a running server holds
// its lock): a write of any kind moves it.
func boltTxID(t *testing.T, path string) uint64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Page header 16 bytes; meta: magic, version, pageSize, flags (4 each),
	// root bucket (16), freelist (8), pgid (8), txid (8).
	const pageSizeAt, txidAt = 16 + 8, 16 + 16 + 16 + 8 + 8
	head := make([]byte, 4096)
	if _, err := io.ReadFull(f, head); err != nil {
		t.Fatal(err)
	}
	pageSize := int64(binary.LittleEndian.Uint32(head[pageSizeAt:]))
	var txid uint64
	for _, page := range []int64{0, pageSize} {
		b := make([]byte, 8)
		if _, err := f.ReadAt(b, page+txidAt); err != nil {
			t.Fatal(err)
		}
		txid = max(txid, binary.LittleEndian.Uint64(b))
	}
	return txid
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// do sends one request and returns its status, headers and body.
func do(t *testing.T, c *http.Client, method, target, contentType, body string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Add(header[i], header[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

func jsonBody(v map[string]string) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// DS1 and SS3 through the whole server: random cookies, unknown tokens and
// states write nothing to the database; unknown emails at /auth/forgot
// overwrite one fixed-size marker, so the file does not grow.
func TestUnauthenticatedTrafficWritesNothing(t *testing.T) {
	up, hits := echoUpstream(t)
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	addUser(t, db, "alice@example.com", testPassword)
	g := startGatehouse(t, db, "--upstream", up.URL, "--public-path", "/static",
		"--github-client-id", "gh-id", "--github-client-secret", "gh-secret",
		"--github-auth-url", "http://127.0.0.1:1/authorize", "--github-token-url", "http://127.0.0.1:1/token",
		"--github-api-url", "http://127.0.0.1:1/api")

	// The check can see writes: a sign-in moves the transaction id.
	before := boltTxID(t, db)
	login(t, newClient(), g.URL, "alice@example.com", testPassword)
	if boltTxID(t, db) == before {
		t.Fatal("a sign-in did not move the transaction id: the check reads the wrong bytes")
	}
	before, size := boltTxID(t, db), fileSize(t, db)

	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	random := func() string { return "gatehouse_session=" + rand.Text() + rand.Text() }
	type step struct {
		method, path, contentType, body string
		status                          int
	}
	steps := []step{
		{"GET", "/app", "", "", http.StatusFound},
		{"HEAD", "/app/x?y=1", "", "", http.StatusFound},
		{"POST", "/app", "text/plain", "x", http.StatusUnauthorized},
		{"GET", "/static/app.js", "", "", http.StatusOK},
		{"GET", "/auth/me", "", "", http.StatusUnauthorized},
		{"POST", "/auth/logout", "", "", http.StatusNoContent},
		{"POST", "/auth/login", "application/json", jsonBody(map[string]string{"email": "nobody@example.com", "password": "some long password"}), http.StatusUnauthorized},
		{"POST", "/auth/login", "application/json", jsonBody(map[string]string{"email": "alice@example.com", "password": "not the password"}), http.StatusUnauthorized},
		{"POST", "/auth/forgot", "application/json", jsonBody(map[string]string{"email": "nobody@example.com"}), http.StatusAccepted},
		{"GET", "/auth/reset?token=" + rand.Text(), "", "", http.StatusGone},
		{"POST", "/auth/reset", "application/json", jsonBody(map[string]string{"token": rand.Text(), "password": "a brand new passphrase"}), http.StatusBadRequest},
		{"GET", "/auth/callback/github?code=" + rand.Text() + "&state=" + rand.Text(), "", "", http.StatusBadRequest},
		{"DELETE", "/auth/link/github", "", "", http.StatusUnauthorized},
		{"GET", "/auth/link/github", "", "", http.StatusFound},
		{"GET", "/auth/nothing-here", "", "", http.StatusNotFound},
	}
	for round := range 20 {
		for _, s := range steps {
			status, _, body := do(t, c, s.method, g.URL+s.path, s.contentType, s.body, "Cookie", random())
			if round == 0 && status != s.status {
				t.Errorf("%s %s: status %d, want %d: %.200s", s.method, s.path, status, s.status, body)
			}
		}
	}
	if *hits != 20 {
		t.Errorf("the upstream saw %d requests, want the 20 to the public path", *hits)
	}
	g.Stop() // the background work of /auth/forgot and the last-seen flush are done
	// A 202 of /auth/forgot is durable (issue 10): for an unknown address it
	// commits one fixed-size marker, at most 3 times (the address's bucket);
	// the file size check below shows that nothing grows.
	if after := boltTxID(t, db); after-before > 3 {
		t.Errorf("unauthenticated traffic committed %d write transactions, want at most the 3 forgot markers", after-before)
	}
	if after := fileSize(t, db); after != size {
		t.Errorf("the database grew from %d to %d bytes", size, after)
	}
}

// sessionCookieOf returns the session cookie a response set.
func sessionCookieOf(t *testing.T, h http.Header) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == "gatehouse_session" || c.Name == "__Host-gatehouse_session" {
			return c
		}
	}
	t.Fatalf("no session cookie in %q", h.Values("Set-Cookie"))
	return nil
}

// SS1, SS2, SS4, SS6 and revocation on the next request, through the
// whole server.
func TestSessionLifecycleEndToEnd(t *testing.T) {
	up, _ := echoUpstream(t)
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	addUser(t, db, "alice@example.com", testPassword)
	g := startGatehouse(t, db, "--upstream", up.URL, "--session-ttl", "12h")
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	credentials := jsonBody(map[string]string{"email": "alice@example.com", "password": testPassword})
	signIn := func(cookie string) *http.Cookie {
		t.Helper()
		var header []string
		if cookie != "" {
			header = []string{"Cookie", "gatehouse_session=" + cookie}
		}
		status, h, body := do(t, c, "POST", g.URL+"/auth/login", "application/json", credentials, header...)
		if status != http.StatusOK {
			t.Fatalf("login: %d %s", status, body)
		}
		return sessionCookieOf(t, h)
	}
	works := func(id string) bool {
		t.Helper()
		status, _, _ := do(t, c, "GET", g.URL+"/app", "", "", "Cookie", "gatehouse_session="+id)
		return status == http.StatusOK
	}

	// SS2: the cookie's attributes.
	planted := rand.Text() + rand.Text()
	first := signIn(planted)
	if !first.HttpOnly || first.SameSite != http.SameSiteLaxMode || first.Path != "/" || first.Secure {
		t.Errorf("cookie attributes: HttpOnly %v SameSite %v Path %q Secure %v (http base URL)", first.HttpOnly, first.SameSite, first.Path, first.Secure)
	}
	if first.MaxAge <= 0 || first.MaxAge > 12*3600 {
		t.Errorf("Max-Age %d, want 1 to %d (--session-ttl)", first.MaxAge, 12*3600)
	}
	// SS1: 256 random bits.
	if raw, err := base64.RawURLEncoding.DecodeString(first.Value); err != nil || len(raw) != 32 {
		t.Errorf("session id %q is not 32 bytes of URL-safe base64: %v", first.Value, err)
	}
	// SS4: the planted cookie was not promoted; every login gets a new id.
	if first.Value == planted || works(planted) {
		t.Error("a cookie planted before login works after it")
	}
	second := signIn(first.Value)
	if second.Value == first.Value {
		t.Error("a second login kept the session id")
	}
	if works(first.Value) {
		t.Error("the session replaced by a new login still works")
	}
	if !works(second.Value) {
		t.Fatal("the new session does not work")
	}

	// SS6 and revocation on the next request: a copy of the cookie (another
	// tab, a stolen copy) stops working with the logout.
	status, h, _ := do(t, c, "POST", g.URL+"/auth/logout", "", "", "Cookie", "gatehouse_session="+second.Value)
	if status != http.StatusNoContent {
		t.Fatalf("logout: %d", status)
	}
	if expired := sessionCookieOf(t, h); expired.MaxAge >= 0 || expired.Value != "" {
		t.Errorf("logout cookie %+v, want an expired one", expired)
	}
	if works(second.Value) {
		t.Error("the session still works after logout")
	}
	status, _, _ = do(t, c, "GET", g.URL+"/auth/logout", "", "")
	if status == http.StatusNoContent || status == http.StatusSeeOther {
		t.Errorf("GET /auth/logout = %d: logout must be POST", status)
	}

	// SS1 on disk: only the SHA-256 of the id is in the file.
	third := signIn("")
	g.Stop()
	file, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(third.Value))
	if bytes.Contains(file, []byte(third.Value)) {
		t.Error("the raw session id is in the database file")
	}
	if !bytes.Contains(file, sum[:]) {
		t.Error("the session's hash is not in the database file: the check reads the wrong bytes")
	}
}

// SS2: Secure follows the base URL unless --cookie-secure says otherwise.
func TestSessionCookieSecure(t *testing.T) {
	up, _ := echoUpstream(t)
	// CK1: with an https base URL the name carries the __Host- prefix.
	for _, tc := range []struct {
		args   []string
		secure bool
		name   string
	}{
		{[]string{"--base-url", "https://gate.example.com"}, true, "__Host-gatehouse_session"},
		{[]string{"--base-url", "https://gate.example.com", "--cookie-secure=false"}, false, "gatehouse_session"},
		{[]string{"--cookie-secure"}, true, "gatehouse_session"},
	} {
		db := filepath.Join(t.TempDir(), "gatehouse.db")
		addUser(t, db, "alice@example.com", testPassword)
		g := startGatehouse(t, db, append([]string{"--upstream", up.URL}, tc.args...)...)
		status, h, body := do(t, http.DefaultClient, "POST", g.URL+"/auth/login", "application/json",
			jsonBody(map[string]string{"email": "alice@example.com", "password": testPassword}))
		if status != http.StatusOK {
			t.Fatalf("%q: login %d %s", tc.args, status, body)
		}
		c := sessionCookieOf(t, h)
		if c.Secure != tc.secure || c.Name != tc.name {
			t.Errorf("%q: %s Secure %v, want %s Secure %v", tc.args, c.Name, c.Secure, tc.name, tc.secure)
		}
		if tc.name == "__Host-gatehouse_session" && (c.Path != "/" || c.Domain != "") {
			t.Errorf("%q: __Host- cookie with Path %q Domain %q", tc.args, c.Path, c.Domain)
		}
		// The proxy reads the session under the same name.
		if status, _, _ := do(t, http.DefaultClient, "GET", g.URL+"/app", "", "", "Cookie", c.Name+"="+c.Value); status != http.StatusOK {
			t.Errorf("%q: proxied request with the %s cookie: %d", tc.args, c.Name, status)
		}
		g.Stop()
	}
}

// The contract's unauthenticated answers, through the whole server, in
// both modes, with a base URL that has a path prefix.
func TestModesEndToEnd(t *testing.T) {
	up, hits := echoUpstream(t)
	for _, mode := range []string{"redirect", "401"} {
		g := startGatehouse(t, filepath.Join(t.TempDir(), "g.db"), "--upstream", up.URL, "--mode", mode,
			"--base-url", "https://example.com/gate")
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		for _, method := range []string{"GET", "HEAD", "POST", "DELETE"} {
			status, h, _ := do(t, c, method, g.URL+"/reports/../app?x=1", "", "", "Host", "evil.example")
			redirect := mode == "redirect" && (method == "GET" || method == "HEAD")
			switch {
			case redirect && (status != http.StatusFound || h.Get("Location") != "https://example.com/gate/auth/login?rd="+url.QueryEscape("/app?x=1")):
				t.Errorf("%s %s: %d %q", mode, method, status, h.Get("Location"))
			case !redirect && (status != http.StatusUnauthorized || h.Get("WWW-Authenticate") == ""):
				t.Errorf("%s %s: %d, WWW-Authenticate %q", mode, method, status, h.Get("WWW-Authenticate"))
			}
			if cc := h.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("%s %s: Cache-Control %q", mode, method, cc)
			}
		}
		g.Stop()
	}
	if *hits != 0 {
		t.Errorf("the upstream saw %d unauthenticated requests", *hits)
	}
}

// The background loops of the server: expired sessions, reset tokens and
// OAuth flows are swept at start (DS1), and last-seen times reach the
// database by the shutdown at the latest (SS5).
func TestBackgroundSweepAndLastSeen(t *testing.T) {
	up, _ := echoUpstream(t)
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	addUser(t, db, "alice@example.com", testPassword)
	store, err := bolt.Open(db, bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	alice, err := store.UserByEmail(ctx, "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	session := func(id string, expires, lastSeen time.Time) storage.Hash {
		h := storage.HashSecret(id)
		if err := store.CreateSession(ctx, storage.Session{IDHash: h, UserID: alice.ID, Email: alice.Email,
			CreatedAt: now.Add(-72 * time.Hour), ExpiresAt: expires, LastSeen: lastSeen}); err != nil {
			t.Fatal(err)
		}
		return h
	}
	expired := session("expired", now.Add(-time.Minute), now.Add(-2*time.Minute))
	idle := session("idle", now.Add(time.Hour), now.Add(-25*time.Hour)) // --session-idle-ttl 24h
	active := session("active", now.Add(time.Hour), now.Add(-10*time.Minute))
	if err := store.IssueResetToken(ctx, storage.ResetToken{Hash: storage.HashSecret("old token"), UserID: alice.ID,
		CreatedAt: now.Add(-time.Hour), ExpiresAt: now.Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateOAuthFlow(ctx, storage.OAuthFlow{StateHash: storage.HashSecret("old state"), Provider: "github",
		Purpose: storage.PurposeLogin, CreatedAt: now.Add(-time.Hour), ExpiresAt: now.Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateWebAuthnCeremony(ctx, storage.WebAuthnCeremony{BrowserHash: storage.HashSecret("old ceremony"), Purpose: storage.CeremonyLogin,
		CreatedAt: now.Add(-time.Hour), ExpiresAt: now.Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	g := startGatehouse(t, db, "--upstream", up.URL)
	for deadline := time.Now().Add(time.Minute); !strings.Contains(g.Logs.String(), `msg="swept expired records"`); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no sweep at start:\n%s", g.Logs.String())
		}
	}
	if line := g.Logs.String(); !strings.Contains(line, "sessions=2 reset_tokens=1 oauth_flows=1") || !strings.Contains(line, "factor_records=1") {
		t.Errorf("sweep line: %s", line)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for id, want := range map[string]int{"expired": http.StatusFound, "idle": http.StatusFound, "active": http.StatusOK} {
		if status, _, _ := do(t, c, "GET", g.URL+"/app", "", "", "Cookie", "gatehouse_session="+id); status != want {
			t.Errorf("session %s: status %d, want %d", id, status, want)
		}
	}
	used := time.Now()
	g.Stop()

	store, err = bolt.Open(db, bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for name, h := range map[string]storage.Hash{"expired": expired, "idle": idle} {
		if _, err := store.Session(ctx, h); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("%s session after the sweep: %v", name, err)
		}
	}
	s, err := store.Session(ctx, active)
	if err != nil {
		t.Fatal(err)
	}
	if s.LastSeen.Before(used.Add(-time.Minute)) {
		t.Errorf("LastSeen %v not written by the shutdown (used at %v)", s.LastSeen, used)
	}
}

// PX2 and LG2 through the whole server: --trusted-proxies decides whose
// X-Forwarded-For and X-Request-Id are believed, for the upstream and for
// the event lines alike.
func TestTrustedProxiesEndToEnd(t *testing.T) {
	up, _ := echoUpstream(t)
	for _, tc := range []struct {
		args           []string
		clientIP, xff  string
		keepsRequestID bool
	}{
		{nil, "127.0.0.1", "127.0.0.1", false},
		{[]string{"--trusted-proxies", "127.0.0.0/8"}, "198.51.100.7", "198.51.100.7, 127.0.0.1", true},
	} {
		db := filepath.Join(t.TempDir(), "gatehouse.db")
		addUser(t, db, "alice@example.com", testPassword)
		g := startGatehouse(t, db, append([]string{"--upstream", up.URL}, tc.args...)...)
		const lbID = "lb-7f3a2c9e-request"
		header := []string{"X-Forwarded-For", "203.0.113.66, 198.51.100.7", "X-Request-Id", lbID}
		status, h, body := do(t, http.DefaultClient, "POST", g.URL+"/auth/login", "application/json",
			jsonBody(map[string]string{"email": "alice@example.com", "password": testPassword}), header...)
		if status != http.StatusOK {
			t.Fatalf("%q: login %d %s", tc.args, status, body)
		}
		cookie := sessionCookieOf(t, h)
		status, _, body = do(t, http.DefaultClient, "GET", g.URL+"/app", "", "", append(header, "Cookie", "gatehouse_session="+cookie.Value)...)
		if status != http.StatusOK {
			t.Fatalf("%q: GET /app %d", tc.args, status)
		}
		var seen struct{ Header http.Header }
		if err := json.Unmarshal([]byte(body), &seen); err != nil {
			t.Fatal(err)
		}
		if got := seen.Header.Get("X-Forwarded-For"); got != tc.xff {
			t.Errorf("%q: upstream X-Forwarded-For %q, want %q", tc.args, got, tc.xff)
		}
		if got := seen.Header.Get("X-Request-Id"); (got == lbID) != tc.keepsRequestID || got == "" {
			t.Errorf("%q: upstream X-Request-Id %q (the load balancer's kept: want %v)", tc.args, got, tc.keepsRequestID)
		}
		g.Stop()
		var login string
		for line := range strings.SplitSeq(g.Logs.String(), "\n") {
			if strings.Contains(line, "event=login_ok") {
				login = line
			}
		}
		if !strings.Contains(login, " client_ip="+tc.clientIP+" ") {
			t.Errorf("%q: login event %q, want client_ip=%s", tc.args, login, tc.clientIP)
		}
		if strings.Contains(login, "request_id="+lbID) != tc.keepsRequestID {
			t.Errorf("%q: login event %q: the load balancer's request id kept: want %v", tc.args, login, tc.keepsRequestID)
		}
	}
}
