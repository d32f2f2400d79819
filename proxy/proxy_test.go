package proxy

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
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
	e.serve(get("/app")) // no cookie: no lookup
	if n := e.lookupCount(t); n != 1 {
		t.Errorf("%d session lookups timed, want 1", n)
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

// Revocation, expiry, SS7, SS8 and SS9: see session_test.go.

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
