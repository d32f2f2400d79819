package proxy

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

const trustedPeer = "10.0.0.5:41000"

func checkEnv(t *testing.T) *env {
	t.Helper()
	return newEnv(t, func(c *Config) {
		c.ForwardAuthTrusted = web.TrustedProxies{netip.MustParsePrefix("10.0.0.0/24")}
	})
}

// forwardAuth is a check request from the trusted peer with the four
// X-Forwarded-* headers of a GET of https://app.example.com + uri.
func forwardAuth(uri string, extra ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, ForwardAuthPath, nil)
	r.RemoteAddr = trustedPeer
	r.Header.Set("X-Forwarded-Method", "GET")
	r.Header.Set("X-Forwarded-Proto", "https")
	r.Header.Set("X-Forwarded-Host", "app.example.com")
	r.Header.Set("X-Forwarded-Uri", uri)
	for i := 0; i+1 < len(extra); i += 2 {
		r.Header.Set(extra[i], extra[i+1])
	}
	return r
}

func authRequest(originalURL string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, AuthRequestPath, nil)
	r.RemoteAddr = trustedPeer
	r.Header.Set("X-Original-Method", "GET")
	r.Header.Set("X-Original-URL", originalURL)
	return r
}

// Every missing, duplicated, ambiguous or malformed forwarded header is 400,
// whether or not the session is valid: never an allow by default (FA1).
func TestCheckRefusesAmbiguousHeaders(t *testing.T) {
	type edit func(h http.Header)
	set := func(name, value string) edit { return func(h http.Header) { h[name] = []string{value} } }
	del := func(name string) edit { return func(h http.Header) { delete(h, name) } }
	add := func(name, value string) edit { return func(h http.Header) { h[name] = append(h[name], value) } }
	fa := []struct {
		name string
		edit edit
	}{
		{"method missing", del("X-Forwarded-Method")},
		{"proto missing", del("X-Forwarded-Proto")},
		{"host missing", del("X-Forwarded-Host")},
		{"uri missing", del("X-Forwarded-Uri")},
		{"method twice", add("X-Forwarded-Method", "GET")},
		{"proto twice", add("X-Forwarded-Proto", "http")},
		{"host twice", add("X-Forwarded-Host", "evil.example")},
		{"uri twice", add("X-Forwarded-Uri", "/static/x")},
		{"uri in a second spelling", set("X_Forwarded_Uri", "/static/x")},
		{"host in a second spelling", set("X_FORWARDED_HOST", "evil.example")},
		{"method lower case", set("X-Forwarded-Method", "get")},
		{"method list", set("X-Forwarded-Method", "GET,POST")},
		{"method empty", set("X-Forwarded-Method", "")},
		{"proto ftp", set("X-Forwarded-Proto", "ftp")},
		{"proto list", set("X-Forwarded-Proto", "https,http")},
		{"host list", set("X-Forwarded-Host", "app.example.com,evil.example")},
		{"host with path", set("X-Forwarded-Host", "app.example.com/x")},
		{"host with user", set("X-Forwarded-Host", "user@app.example.com")},
		{"host with space", set("X-Forwarded-Host", "app example.com")},
		{"host bad port", set("X-Forwarded-Host", "app.example.com:http")},
		{"host empty port", set("X-Forwarded-Host", "app.example.com:")},
		{"host empty", set("X-Forwarded-Host", "")},
		{"uri relative", set("X-Forwarded-Uri", "private")},
		{"uri absolute form", set("X-Forwarded-Uri", "https://evil.example/private")},
		{"uri with fragment", set("X-Forwarded-Uri", "/private#x")},
		{"uri with space", set("X-Forwarded-Uri", "/static/ /../private")},
		{"uri with tab", set("X-Forwarded-Uri", "/static/\t/../private")},
		{"uri bad escape", set("X-Forwarded-Uri", "/static/%zz/../private")},
		{"uri with NUL escape decoded control", set("X-Forwarded-Uri", "/static/\x00")},
		{"uri non-ASCII", set("X-Forwarded-Uri", "/static/\xc3\xa9")},
		{"uri too long", set("X-Forwarded-Uri", "/static/"+strings.Repeat("a", 9000))},
	}
	ar := []struct{ name, url string }{
		{"relative", "/static/x"},
		{"scheme-relative", "//app.example.com/static/x"},
		{"ftp", "ftp://app.example.com/static/x"},
		{"no host", "http:///static/x"},
		{"user info", "https://user:pw@app.example.com/static/x"},
		{"fragment", "https://app.example.com/static/x#y"},
		{"opaque", "https:app.example.com/static/x"},
		{"bad escape (Authelia CVE-2021-32637)", "https://app.example.com/static/%zz"},
		{"space (Authelia CVE-2021-32637)", "https://app.example.com/static/ x"},
		{"control", "https://app.example.com/static/\x7f"},
		{"bad port", "https://app.example.com:x/static/x"},
		{"empty", ""},
	}
	for _, signedIn := range []bool{false, true} {
		e := checkEnv(t)
		id := e.signIn(sessionID)
		for _, tc := range fa {
			r := forwardAuth("/static/x")
			tc.edit(r.Header)
			if signedIn {
				withCookie(r, id)
			}
			if res := e.serve(r); res.StatusCode != http.StatusBadRequest {
				t.Errorf("forward-auth, %s (signed in %v): status %d, want 400", tc.name, signedIn, res.StatusCode)
			}
		}
		for _, tc := range ar {
			r := authRequest(tc.url)
			if signedIn {
				withCookie(r, id)
			}
			if res := e.serve(r); res.StatusCode != http.StatusBadRequest {
				t.Errorf("auth-request, %s (signed in %v): status %d, want 400", tc.name, signedIn, res.StatusCode)
			}
		}
		for _, tc := range []struct {
			name string
			edit edit
		}{
			{"method missing", del("X-Original-Method")},
			{"url twice", add("X-Original-Url", "https://app.example.com/private")},
			{"url second spelling", set("X_Original_URL", "https://app.example.com/private")},
			{"method twice", add("X-Original-Method", "POST")},
		} {
			r := authRequest("https://app.example.com/static/x")
			tc.edit(r.Header)
			if res := e.serve(r); res.StatusCode != http.StatusBadRequest {
				t.Errorf("auth-request, %s: status %d, want 400", tc.name, res.StatusCode)
			}
		}
		if n := e.upstream.count(); n != 0 {
			t.Fatalf("check endpoints reached the upstream %d times", n)
		}
	}
}

// The decisions of both endpoints, with the peers' CVEs as regressions.
func TestCheckDecisions(t *testing.T) {
	login := func(rd string) string {
		return web.Denier{BaseURL: baseURL}.LoginURL(rd)
	}
	cases := []struct {
		name     string
		req      func() *http.Request
		signedIn bool
		status   int
		location string
	}{
		{"signed in", func() *http.Request { return forwardAuth("/private") }, true, 200, ""},
		{"public, no session", func() *http.Request { return forwardAuth("/static/app.css") }, false, 200, ""},
		{"browser redirected with the absolute original URL", func() *http.Request {
			return forwardAuth("/private?a=1", "Accept", "text/html")
		}, false, 302, login("https://app.example.com/private?a=1")},
		{"API request 401", func() *http.Request { return forwardAuth("/private", "Accept", "application/json") }, false, 401, ""},
		{"POST from a browser 401", func() *http.Request {
			return forwardAuth("/private", "Accept", "text/html", "X-Forwarded-Method", "POST")
		}, false, 401, ""},
		// oauth2-proxy GHSA-7x63-xv5r-3p2x: a public path in the query is not a public path.
		{"public path in the query", func() *http.Request { return forwardAuth("/private?x=/static/a") }, false, 401, ""},
		{"public path in the query, auth-request", func() *http.Request {
			return authRequest("https://app.example.com/private?/static/")
		}, false, 401, login("https://app.example.com/private?/static/")},
		// The original path is cleaned exactly as the proxy cleans it.
		{"dot-dot out of a public path", func() *http.Request { return forwardAuth("/static/../private") }, false, 401, ""},
		{"encoded dot-dot", func() *http.Request { return forwardAuth("/static/%2e%2e/private") }, false, 401, ""},
		{"encoded slash dot-dot", func() *http.Request { return forwardAuth("/static%2f..%2fprivate") }, false, 401, ""},
		{"tomcat ..;", func() *http.Request { return forwardAuth("/static/..;/private") }, false, 401, ""},
		{"backslash", func() *http.Request { return forwardAuth(`/static/..\private`) }, false, 401, ""},
		{"double slash", func() *http.Request { return forwardAuth("//static/x") }, false, 200, ""},
		{"auth-request signed in", func() *http.Request { return authRequest("https://app.example.com/private") }, true, 200, ""},
		{"auth-request public", func() *http.Request { return authRequest("https://app.example.com/static/x") }, false, 200, ""},
		{"auth-request 401 with Location", func() *http.Request {
			return authRequest("http://app.example.com:8443/a/../private")
		}, false, 401, login("http://app.example.com:8443/private")},
		{"auth-request dot-dot", func() *http.Request {
			return authRequest("https://app.example.com/static/%2e%2e/private")
		}, false, 401, login("https://app.example.com/private")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := checkEnv(t)
			r := tc.req()
			if tc.signedIn {
				withCookie(r, e.signIn(sessionID))
			}
			res := e.serve(r)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tc.status)
			}
			if got := res.Header.Get("Location"); got != tc.location {
				t.Fatalf("Location %q, want %q", got, tc.location)
			}
			if res.Header.Get("Cache-Control") != "no-store" {
				t.Fatalf("Cache-Control %q", res.Header.Get("Cache-Control"))
			}
			if tc.status == 401 && res.Header.Get("WWW-Authenticate") == "" {
				t.Fatal("401 without WWW-Authenticate")
			}
			if tc.status == 200 {
				// Caddy GHSA-7r4p-vjf4-gxv4: every identity header is in
				// every 200, empty or not, so a copy always overwrites
				// the client's.
				for _, name := range []string{"X-Forwarded-User", "X-Forwarded-Email", "X-Forwarded-Groups"} {
					if len(res.Header[name]) != 1 {
						t.Fatalf("%s: %q", name, res.Header[name])
					}
				}
			}
			if identity := res.Header.Get("X-Forwarded-User") != ""; identity != tc.signedIn {
				t.Fatalf("identity headers %v, want signed in %v", res.Header, tc.signedIn)
			}
			if tc.signedIn {
				if res.Header.Get("X-Forwarded-User") != userID || res.Header.Get("X-Forwarded-Email") != userEmail {
					t.Fatalf("identity %v", res.Header)
				}
			}
			if e.upstream.count() != 0 || e.auth.count() != 0 {
				t.Fatal("a check request went on to the upstream or the auth handler")
			}
		})
	}
}

// Only trusted peers may ask; a spoofed X-Forwarded-Uri or X-Original-URL
// from anyone else is refused (oauth2-proxy GHSA-7x63-xv5r-3p2x's cousin,
// PX4), signed in or not.
func TestCheckUntrustedPeer(t *testing.T) {
	e := checkEnv(t)
	id := e.signIn(sessionID)
	for _, r := range []*http.Request{forwardAuth("/static/x"), authRequest("https://app.example.com/static/x")} {
		for _, peer := range []string{"192.0.2.1:5000", "10.0.1.5:5000", "[::1]:5000", "not-an-address"} {
			r.RemoteAddr = peer
			withCookie(r, id)
			if res := e.serve(r); res.StatusCode != http.StatusForbidden {
				t.Errorf("%s from %s: status %d, want 403", r.URL.Path, peer, res.StatusCode)
			}
		}
	}
	// Through the proxy path, the same headers are ignored (PX4): a
	// protected path stays protected whatever X-Forwarded-Uri says.
	r := get("/private", "X-Forwarded-Uri", "/static/x", "X-Original-URL", "https://app.example.com/static/x")
	if res := e.serve(r); res.StatusCode != http.StatusFound || e.upstream.count() != 0 {
		t.Fatalf("spoofed routing headers on the proxy path: status %d", res.StatusCode)
	}
}

// Without --forward-auth-trusted the endpoints are off: the request is an
// ordinary /auth/ request (the auth handler answers 404 there).
func TestCheckOff(t *testing.T) {
	e := newEnv(t)
	r := forwardAuth("/static/x")
	e.serve(r)
	if e.auth.count() != 1 {
		t.Fatal("check endpoint answered with forward-auth off")
	}
	if got := e.auth.last(t).Header.Get("X-Forwarded-Uri"); got != "" {
		t.Fatalf("the auth handler got the client's X-Forwarded-Uri %q", got)
	}
}

func TestCheckStoreFailure(t *testing.T) {
	e := checkEnv(t)
	id := e.signIn(sessionID)
	e.store.setErr(errors.New("disk on fire"))
	res := e.serve(withCookie(forwardAuth("/static/x"), id))
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("store failure: status %d, want 503", res.StatusCode)
	}
}

func TestCheckAssertion(t *testing.T) {
	e, _, jwksURL := assertionEnv(t)
	e.proxy.checkPeers = web.TrustedProxies{netip.MustParsePrefix("10.0.0.0/24")}
	id := e.signIn(sessionID)
	res := e.serve(withCookie(forwardAuth("/private"), id))
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	claims := verifyAssertion(t, jwksURL, res.Header.Get(AssertionHeader))
	if claims["sub"] != userID {
		t.Fatalf("claims %v", claims)
	}
}

// Caddy GHSA-7r4p-vjf4-gxv4: a fronting proxy that copies the identity
// headers from the check's 200 leaves the client's copy of any header the
// answer lacks. So every 200 names all four, the assertion included, even
// with --identity-assertion=false (FA1, JW1).
func TestCheckNamesEveryIdentityHeader(t *testing.T) {
	withAssertions, _, _ := assertionEnv(t)
	withAssertions.proxy.checkPeers = web.TrustedProxies{netip.MustParsePrefix("10.0.0.0/24")}
	for _, tc := range []struct {
		name     string
		e        *env
		uri      string
		signedIn bool
	}{
		{"signed in, assertions off", checkEnv(t), "/private", true},
		{"public, assertions off", checkEnv(t), "/static/x", false},
		{"signed in on a public path, assertions off", checkEnv(t), "/static/x", true},
		{"signed in, assertions on", withAssertions, "/private", true},
		{"public, assertions on", withAssertions, "/static/x", false},
	} {
		r := forwardAuth(tc.uri, "X-Gatehouse-Jwt-Assertion", "forged", "X-Forwarded-User", "admin")
		if tc.signedIn {
			withCookie(r, tc.e.signIn(sessionID))
		}
		res := tc.e.serve(r)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", tc.name, res.StatusCode)
		}
		for _, name := range []string{"X-Forwarded-User", "X-Forwarded-Email", "X-Forwarded-Groups", AssertionHeader} {
			if v := res.Header[name]; len(v) != 1 || v[0] == "forged" || v[0] == "admin" {
				t.Errorf("%s: %s = %q, want exactly one value of Gatehouse's own", tc.name, name, v)
			}
		}
	}
}
