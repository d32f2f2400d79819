package proxy

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

func TestForwardSignedIn(t *testing.T) {
	e := newEnv(t)
	id := e.signIn(sessionID)
	r := withCookie(get("/app/page?q=1"), id)
	res := e.serve(r)
	if res.StatusCode != http.StatusOK || body(t, res) != "ok" {
		t.Fatalf("status %d", res.StatusCode)
	}
	got := e.upstream.last(t)
	want := map[string]string{
		"X-Forwarded-User":  userID,
		"X-Forwarded-Email": userEmail,
		"X-Forwarded-For":   "192.0.2.1",
		"X-Forwarded-Host":  "example.com",
		"X-Forwarded-Proto": "http",
	}
	for name, value := range want {
		if v := got.Header.Values(name); len(v) != 1 || v[0] != value {
			t.Errorf("%s = %q, want %q", name, v, value)
		}
	}
	if got.RequestURI != "/app/page?q=1" {
		t.Errorf("upstream request URI %q", got.RequestURI)
	}
	if got.Host != e.upURL.Host {
		t.Errorf("upstream Host %q, want %q", got.Host, e.upURL.Host)
	}
	if e.counterValue(t, "forwarded") != 1 {
		t.Error("forwarded not counted")
	}
}

func TestForwardedProtoWhenTerminatingTLS(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.TLS = true })
	e.serve(withCookie(get("/"), e.signIn(sessionID)))
	if v := e.upstream.last(t).Header.Get("X-Forwarded-Proto"); v != "https" {
		t.Fatalf("X-Forwarded-Proto = %q", v)
	}
}

// RM1: the same requests are allowed or denied in both modes; only the answer differs.
func TestDecisionSameInBothModes(t *testing.T) {
	cases := []struct {
		method, target string
		signedIn       bool
		allowed        bool
	}{
		{"GET", "/", false, false},
		{"GET", "/app", false, false},
		{"POST", "/app", false, false},
		{"HEAD", "/app?x=/static", false, false},
		{"GET", "/staticky", false, false},
		{"GET", "/static", false, true},
		{"GET", "/static/app.js", false, true},
		{"DELETE", "/public/x", false, true},
		{"GET", "/app", true, true},
		{"POST", "/app", true, true},
	}
	for _, mode := range []web.Mode{web.ModeRedirect, web.Mode401} {
		e := newEnv(t, func(c *Config) { c.Denier.Mode = mode })
		e.signIn(sessionID)
		for _, tc := range cases {
			before := e.upstream.count()
			r := httptest.NewRequest(tc.method, tc.target, nil)
			if tc.signedIn {
				withCookie(r, sessionID)
			}
			res := e.serve(r)
			reached := e.upstream.count() > before
			if reached != tc.allowed {
				t.Errorf("mode %s: %s %s signed in %v: reached upstream %v, want %v (status %d)",
					mode, tc.method, tc.target, tc.signedIn, reached, tc.allowed, res.StatusCode)
			}
			if !tc.allowed && res.StatusCode != http.StatusFound && res.StatusCode != http.StatusUnauthorized {
				t.Errorf("mode %s: %s %s: status %d", mode, tc.method, tc.target, res.StatusCode)
			}
		}
	}
}

// RM2, RM3, and POST in redirect mode.
func TestDenyAnswers(t *testing.T) {
	cases := []struct {
		name     string
		mode     web.Mode
		method   string
		status   int
		location string
	}{
		{"redirect GET", web.ModeRedirect, "GET", http.StatusFound,
			"https://gate.example.com/auth/login?rd=%2Fapp%2Fx%3Fa%3D1%26b%3D2"},
		{"redirect HEAD", web.ModeRedirect, "HEAD", http.StatusFound,
			"https://gate.example.com/auth/login?rd=%2Fapp%2Fx%3Fa%3D1%26b%3D2"},
		{"redirect POST gets 401", web.ModeRedirect, "POST", http.StatusUnauthorized, ""},
		{"401 GET", web.Mode401, "GET", http.StatusUnauthorized, ""},
		{"401 PUT", web.Mode401, "PUT", http.StatusUnauthorized, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.Denier.Mode = tc.mode })
			// The path is cleaned for rd; Host and X-Forwarded-Host are spoofed.
			r := httptest.NewRequest(tc.method, "/app/y/../x?a=1&b=2", strings.NewReader("body"))
			r.Host = "evil.example"
			r.Header.Set("X-Forwarded-Host", "evil.example")
			r.Header.Set("Forwarded", "host=evil.example")
			res := e.serve(r)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tc.status)
			}
			if got := res.Header.Get("Location"); got != tc.location {
				t.Errorf("Location %q, want %q", got, tc.location)
			}
			if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control %q", cc)
			}
			if tc.status == http.StatusUnauthorized {
				if res.Header.Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
				var p web.Problem
				if err := json.NewDecoder(res.Body).Decode(&p); err != nil || p.Code != "unauthenticated" {
					t.Errorf("problem %+v, %v", p, err)
				}
			}
			if e.upstream.count() != 0 {
				t.Error("denied request reached the upstream")
			}
			outcome := "unauthenticated"
			if tc.status == http.StatusFound {
				outcome = "redirected"
			}
			if e.counterValue(t, outcome) != 1 {
				t.Errorf("%s not counted", outcome)
			}
		})
	}
}

func TestPublicPaths(t *testing.T) {
	cases := []struct {
		target string
		public bool
	}{
		{"/static", true},
		{"/static/", true},
		{"/static/css/a.css", true},
		{"/static/../static/x", true},
		{"/staticky", false},
		{"/static.css", false},
		{"/Static/x", false},
		{"/public", true},
		{"/public/x", true},
		{"/publicity", false},
		{"/app?path=/static/x", false},
		{"/app#/static", false},
		{"/app/static", false},
		{"/static/..;/admin", false},
		{"/static/.;/admin", false},
		{"/static/%2e%2e;x/admin", false},
		{"/static/..%5cadmin", false},
		{"/static;jsessionid=1/x", false},
	}
	for _, tc := range cases {
		e := newEnv(t)
		res := e.serve(get(tc.target))
		if reached := e.upstream.count() == 1; reached != tc.public {
			t.Errorf("%s without session: reached upstream %v, want %v (status %d)", tc.target, reached, tc.public, res.StatusCode)
		}
		if tc.public {
			if v := e.upstream.last(t).Header.Get("X-Forwarded-User"); v != "" {
				t.Errorf("%s: anonymous request carries X-Forwarded-User %q", tc.target, v)
			}
			if e.counterValue(t, "public") != 1 {
				t.Errorf("%s: public not counted", tc.target)
			}
		}
	}
}

func TestPublicPathAddsIdentityWithSession(t *testing.T) {
	e := newEnv(t)
	e.serve(withCookie(get("/static/x"), e.signIn(sessionID)))
	got := e.upstream.last(t)
	if got.Header.Get("X-Forwarded-User") != userID || got.Header.Get("X-Forwarded-Email") != userEmail {
		t.Fatalf("identity headers %v", got.Header)
	}
}

func TestPublicPathConfig(t *testing.T) {
	for _, bad := range []string{"static", "/auth", "/auth/x", "/x?y", "/a;b", `/a\b`} {
		_, err := New(Config{
			Upstream: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}, Auth: http.NotFoundHandler(),
			Sessions: newFakeStore(), Denier: web.Denier{Mode: web.Mode401}, PublicPaths: []string{bad},
		})
		if err == nil {
			t.Errorf("public path %q accepted", bad)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	up := &url.URL{Scheme: "http", Host: "127.0.0.1:1"}
	cases := map[string]Config{
		"no upstream":          {Auth: http.NotFoundHandler(), Sessions: newFakeStore(), Denier: web.Denier{Mode: web.Mode401}},
		"relative upstream":    {Upstream: &url.URL{Path: "/x"}, Auth: http.NotFoundHandler(), Sessions: newFakeStore(), Denier: web.Denier{Mode: web.Mode401}},
		"no auth":              {Upstream: up, Sessions: newFakeStore(), Denier: web.Denier{Mode: web.Mode401}},
		"no sessions":          {Upstream: up, Auth: http.NotFoundHandler(), Denier: web.Denier{Mode: web.Mode401}},
		"no mode":              {Upstream: up, Auth: http.NotFoundHandler(), Sessions: newFakeStore()},
		"redirect without url": {Upstream: up, Auth: http.NotFoundHandler(), Sessions: newFakeStore(), Denier: web.Denier{Mode: web.ModeRedirect}},
	}
	for name, cfg := range cases {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Everything under /auth/ goes to the auth handler, with the cleaned URL, never upstream.
func TestAuthPaths(t *testing.T) {
	cases := []struct{ target, authPath string }{
		{"/auth", "/auth"},
		{"/auth/", "/auth/"},
		{"/auth/login?rd=/x", "/auth/login"},
		{"/auth/unknown", "/auth/unknown"},
		{"/app/../auth/me", "/auth/me"},
		{"//auth//me", "/auth/me"},
		{"/auth/%2e/me", "/auth/me"},
	}
	for _, tc := range cases {
		e := newEnv(t)
		e.serve(withCookie(get(tc.target), e.signIn(sessionID)))
		if e.upstream.count() != 0 {
			t.Errorf("%s reached the upstream", tc.target)
		}
		if e.auth.count() != 1 {
			t.Fatalf("%s did not reach the auth handler", tc.target)
		}
		got := e.auth.last(t)
		if got.Path != tc.authPath || got.RawPath != "" {
			t.Errorf("%s: auth handler saw path %q raw %q, want %q", tc.target, got.Path, got.RawPath, tc.authPath)
		}
		if got.Header.Get("Cookie") == "" {
			t.Errorf("%s: auth handler lost the session cookie", tc.target)
		}
		if e.store.reads.Load() != 0 {
			t.Errorf("%s: proxy read the session for /auth/", tc.target)
		}
	}
	e := newEnv(t)
	e.serve(get("/authx"))
	if e.auth.count() != 0 {
		t.Error("/authx went to the auth handler")
	}
}

// PX6: bodies under /auth/ are capped.
func TestAuthBodyCap(t *testing.T) {
	e := newEnv(t)
	big := strings.Repeat("a", AuthBodyLimit+1)
	res := e.serve(httptest.NewRequest("POST", "/auth/login", strings.NewReader(big)))
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("declared oversize body: status %d", res.StatusCode)
	}
	if e.auth.count() != 0 {
		t.Fatal("oversize body reached the auth handler")
	}

	var readErr error
	e.auth.handler = func(w http.ResponseWriter, r *http.Request) {
		_, readErr = r.Body.Read(make([]byte, 2*AuthBodyLimit))
		for readErr == nil {
			_, readErr = r.Body.Read(make([]byte, 1024))
		}
	}
	r := httptest.NewRequest("POST", "/auth/login", strings.NewReader(big))
	r.ContentLength = -1 // chunked: the cap is enforced while reading
	e.serve(r)
	var tooLarge *http.MaxBytesError
	if !errors.As(readErr, &tooLarge) {
		t.Fatalf("reading an unbounded body: %v", readErr)
	}
}

func TestSessionStates(t *testing.T) {
	cases := []struct {
		name    string
		session *storage.Session // nil: no record
		cookie  string
		ok      bool
	}{
		{"valid", &storage.Session{ExpiresAt: epoch.Add(time.Hour), LastSeen: epoch.Add(-time.Minute)}, sessionID, true},
		{"no cookie", &storage.Session{ExpiresAt: epoch.Add(time.Hour), LastSeen: epoch}, "", false},
		{"unknown id", nil, "random-cookie-value", false},
		{"empty value", nil, `""`, false},
		{"absolute expiry reached", &storage.Session{ExpiresAt: epoch, LastSeen: epoch}, sessionID, false},
		{"absolute expiry passed", &storage.Session{ExpiresAt: epoch.Add(-time.Second), LastSeen: epoch}, sessionID, false},
		{"idle too long", &storage.Session{ExpiresAt: epoch.Add(time.Hour), LastSeen: epoch.Add(-time.Hour)}, sessionID, false},
		{"idle just within", &storage.Session{ExpiresAt: epoch.Add(time.Hour), LastSeen: epoch.Add(-time.Hour + time.Second)}, sessionID, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.session != nil {
				s := *tc.session
				s.UserID, s.Email = userID, userEmail
				e.store.put(sessionID, s)
			}
			records := e.store.count()
			r := get("/app")
			if tc.cookie != "" {
				withCookie(r, tc.cookie)
			}
			res := e.serve(r)
			if reached := e.upstream.count() == 1; reached != tc.ok {
				t.Fatalf("reached upstream %v, want %v (status %d)", reached, tc.ok, res.StatusCode)
			}
			// SS3: an unknown or expired id creates no record and no write.
			if err := e.lastSeen.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			if !tc.ok && (e.store.count() != records || e.store.touchCalls() != 0) {
				t.Errorf("rejected session wrote: %d records (was %d), %d touches", e.store.count(), records, e.store.touchCalls())
			}
		})
	}
}

// Revocation and expiry take effect on the very next request.
func TestRevocationAndExpiryOnNextRequest(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.IdleTTL = 30 * time.Minute })
	id := e.signIn(sessionID)
	ok := func() bool {
		before := e.upstream.count()
		e.serve(withCookie(get("/app"), id))
		return e.upstream.count() > before
	}
	if !ok() {
		t.Fatal("valid session refused")
	}
	e.store.remove(id)
	if ok() {
		t.Fatal("deleted session still forwarded")
	}

	e.signIn(id) // LastSeen epoch-10s, ExpiresAt epoch+24h
	e.clock.Advance(29 * time.Minute)
	if !ok() {
		t.Fatal("session refused within the idle limit")
	}
	e.clock.Advance(2 * time.Minute) // LastSeen was never flushed: 31 min idle
	if ok() {
		t.Fatal("idle session forwarded")
	}

	e.signIn(id)
	e.store.put(id, storage.Session{UserID: userID, ExpiresAt: e.clock.Now().Add(time.Minute), LastSeen: e.clock.Now()})
	if !ok() {
		t.Fatal("session refused before absolute expiry")
	}
	e.clock.Advance(time.Minute)
	if ok() {
		t.Fatal("session forwarded at absolute expiry")
	}
	if reads := e.store.reads.Load(); reads != 6 {
		t.Errorf("%d store reads for 6 requests, want one each", reads)
	}
}

// SS7: the id is read only from the Cookie header.
func TestSessionIDOnlyFromCookie(t *testing.T) {
	cases := []struct {
		name string
		req  *http.Request
		ok   bool
	}{
		{"cookie header", get("/app", "Cookie", "gatehouse_session="+sessionID), true},
		{"among other cookies", get("/app", "Cookie", "a=1; gatehouse_session="+sessionID+"; b=2"), true},
		{"second cookie header", get("/app", "Cookie", "a=1", "Cookie", "gatehouse_session="+sessionID), true},
		{"quoted", get("/app", "Cookie", `gatehouse_session="`+sessionID+`"`), true},
		{"query parameter", get("/app?gatehouse_session=" + sessionID), false},
		{"authorization header", get("/app", "Authorization", "Bearer "+sessionID), false},
		{"custom header", get("/app", "Gatehouse-Session", sessionID), false},
		{"header named like the cookie", get("/app", "gatehouse_session", sessionID), false},
		{"other cookie name", get("/app", "Cookie", "session="+sessionID), false},
		{"name case differs", get("/app", "Cookie", "Gatehouse_Session="+sessionID), false},
		{"name as value", get("/app", "Cookie", "x="+sessionID+"gatehouse_session"), false},
	}
	for _, tc := range cases {
		e := newEnv(t)
		e.signIn(sessionID)
		e.serve(tc.req)
		if reached := e.upstream.count() == 1; reached != tc.ok {
			t.Errorf("%s: reached upstream %v, want %v", tc.name, reached, tc.ok)
		}
	}
}

// SS8, request side: only the session cookie is removed.
func TestSessionCookieStrippedUpstream(t *testing.T) {
	cases := []struct {
		name    string
		cookies []string
		want    []string // nil: no Cookie header at all
	}{
		{"alone", []string{"gatehouse_session=" + sessionID}, nil},
		{"middle", []string{"a=1; gatehouse_session=" + sessionID + "; b=2"}, []string{"a=1; b=2"}},
		{"first", []string{"gatehouse_session=" + sessionID + ";theme=dark"}, []string{"theme=dark"}},
		{"duplicate", []string{"gatehouse_session=" + sessionID + "; a=1; gatehouse_session=other"}, []string{"a=1"}},
		{"two headers", []string{"a=1; b=\"q\"", "gatehouse_session=" + sessionID}, []string{"a=1; b=\"q\""}},
		{"similar names kept", []string{"gatehouse_session=" + sessionID + "; gatehouse_session_x=1; xgatehouse_session=2"},
			[]string{"gatehouse_session_x=1; xgatehouse_session=2"}},
	}
	for _, tc := range cases {
		e := newEnv(t)
		e.signIn(sessionID)
		r := get("/app")
		for _, c := range tc.cookies {
			r.Header.Add("Cookie", c)
		}
		e.serve(r)
		got := e.upstream.last(t).Header.Values("Cookie")
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || (tc.want == nil) != (got == nil) {
			t.Errorf("%s: upstream Cookie %q, want %q", tc.name, got, tc.want)
		}
	}
	// Public path, no valid session: the cookie is still not forwarded.
	e := newEnv(t)
	e.serve(get("/static/x", "Cookie", "gatehouse_session=unknown; a=1"))
	if got := e.upstream.last(t).Header.Values("Cookie"); len(got) != 1 || got[0] != "a=1" {
		t.Errorf("public path: upstream Cookie %q", got)
	}
}

// SS8, response side: the upstream cannot set or clear the session cookie.
func TestUpstreamSetCookieDropped(t *testing.T) {
	e := newEnv(t)
	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Add("Set-Cookie", "gatehouse_session=planted; Path=/; HttpOnly")
		h.Add("Set-Cookie", "theme=dark; Path=/")
		h.Add("Set-Cookie", " gatehouse_session =x")
		h.Add("Set-Cookie", "=gatehouse_session=nameless")
		h.Add("Set-Cookie", "gatehouse_session=; Max-Age=0")
		h.Add("Set-Cookie", "gatehouse_session_other=1")
	}
	res := e.serve(withCookie(get("/app"), e.signIn(sessionID)))
	got := res.Header.Values("Set-Cookie")
	want := []string{"theme=dark; Path=/", "gatehouse_session_other=1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("Set-Cookie %q, want %q", got, want)
	}

	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Set-Cookie", "gatehouse_session=planted")
	}
	res = e.serve(get("/static/x"))
	if got := res.Header.Values("Set-Cookie"); len(got) != 0 {
		t.Fatalf("public path: Set-Cookie %q", got)
	}
}

// SS9: a store error never forwards.
func TestStoreErrorFailsClosed(t *testing.T) {
	for _, target := range []string{"/app", "/static/x"} {
		e := newEnv(t)
		e.signIn(sessionID)
		e.store.setErr(errors.New("disk on fire"))
		res := e.serve(withCookie(get(target), sessionID))
		if res.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s: status %d", target, res.StatusCode)
		}
		var p web.Problem
		if err := json.NewDecoder(res.Body).Decode(&p); err != nil || p.Code != "store_unavailable" {
			t.Errorf("%s: problem %+v %v", target, p, err)
		}
		if e.upstream.count() != 0 {
			t.Errorf("%s: forwarded despite a store error", target)
		}
		if e.counterValue(t, "error") != 1 {
			t.Errorf("%s: error not counted", target)
		}
		if strings.Contains(e.logs.String(), sessionID) {
			t.Errorf("%s: session id logged", target)
		}
	}
}

// LG3: a path carrying CR/LF cannot forge a log line.
func TestLogEscapesLineBreaks(t *testing.T) {
	e := newEnv(t)
	e.store.setErr(errors.New("down"))
	e.serve(withCookie(get("/x%0D%0Alevel=ERROR%20msg=forged"), sessionID))
	logs := e.logs.String()
	lines := strings.Split(strings.TrimSuffix(logs, "\n"), "\n")
	if len(lines) != 1 || strings.Contains(logs, "\r") {
		t.Fatalf("log output spans %d lines: %q", len(lines), logs)
	}
	if !strings.Contains(lines[0], `\r\n`) {
		t.Fatalf("path not logged escaped: %q", logs)
	}
}
