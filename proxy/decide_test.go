package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// recordingRoutes answers every request with one route and remembers what
// it was asked.
type recordingRoutes struct {
	mu     sync.Mutex
	answer route
	asked  []string // "host method path"
}

func (rr *recordingRoutes) route(host, method, path string) route {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.asked = append(rr.asked, host+" "+method+" "+path)
	return rr.answer
}

func (rr *recordingRoutes) last() string {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if len(rr.asked) == 0 {
		return ""
	}
	return rr.asked[len(rr.asked)-1]
}

// The route is chosen from the request the upstream gets (Pomerium
// CVE-2023-33189): the cleaned path, never the query; the host without port,
// trailing dot or case; the method upper case. The proxy asks with its own
// Host, the check endpoints with the forwarded host and method.
func TestRouteAskedWithWhatIsForwarded(t *testing.T) {
	rr := &recordingRoutes{}
	e := checkEnv(t)
	e.proxy.routes = rr
	id := e.signIn(sessionID)

	r := withCookie(httptest.NewRequest("post", "http://App.Example.COM.:8080/a/../b/?x=/static", nil), id)
	if res := e.serve(r); res.StatusCode != http.StatusOK {
		t.Fatalf("proxy: status %d", res.StatusCode)
	}
	if got, want := rr.last(), "app.example.com POST /b/"; got != want {
		t.Errorf("proxy asked for %q, want %q", got, want)
	}
	if got := e.upstream.last(t).Path; got != "/b/" {
		t.Errorf("upstream got %q", got)
	}

	r = withCookie(forwardAuth("/c/%2e%2e/d?x=/static", "X-Forwarded-Host", "Gate.Example.com:443", "X-Forwarded-Method", "DELETE"), id)
	if res := e.serve(r); res.StatusCode != http.StatusOK {
		t.Fatalf("forward-auth: status %d", res.StatusCode)
	}
	if got, want := rr.last(), "gate.example.com DELETE /d"; got != want {
		t.Errorf("forward-auth asked for %q, want %q", got, want)
	}
	if res := e.serve(withCookie(authRequest("https://[2001:dB8::1]:8443/e//f"), id)); res.StatusCode != http.StatusOK {
		t.Fatalf("auth-request: status %d", res.StatusCode)
	}
	if got, want := rr.last(), "2001:db8::1 GET /e/f"; got != want {
		t.Errorf("auth-request asked for %q, want %q", got, want)
	}
}

// A route that denies refuses everyone, signed in or not, with 403
// route_denied, on the proxy and on both check endpoints, without a store
// read; nothing reaches the upstream.
func TestDenyRoute(t *testing.T) {
	e := checkEnv(t)
	e.proxy.routes = &recordingRoutes{answer: route{access: accessDeny}}
	id := e.signIn(sessionID)
	for name, r := range map[string]*http.Request{
		"proxy, signed in":     withCookie(get("/app", "Accept", "application/json"), id),
		"proxy, anonymous":     get("/app", "Accept", "application/json"),
		"forward-auth":         withCookie(forwardAuth("/app", "Accept", "application/json"), id),
		"auth-request":         authRequest("https://app.example.com/app"),
		"proxy, browser, page": withCookie(get("/app", "Accept", "text/html"), id),
	} {
		res := e.serve(r)
		text := body(t, res)
		if res.StatusCode != http.StatusForbidden || !strings.Contains(text, "route_denied") {
			t.Errorf("%s: status %d, body %.80q; want 403 route_denied", name, res.StatusCode, text)
		}
		if res.Header.Get("X-Forwarded-User") != "" {
			t.Errorf("%s: an identity in a refusal", name)
		}
	}
	if n := e.store.reads.Load(); n != 0 {
		t.Errorf("%d store reads for requests every one of which is refused", n)
	}
	if e.upstream.count() != 0 {
		t.Error("a denied request reached the upstream")
	}
	if got := e.counterValue(t, "refused"); got != 5 {
		t.Errorf("refused counted %v times, want 5, as the access policy's refusals", got)
	}
}

func TestRouteHost(t *testing.T) {
	for host, want := range map[string]string{
		"app.example.com":       "app.example.com",
		"App.Example.COM":       "app.example.com",
		"app.example.com.":      "app.example.com",
		"app.example.com:8443":  "app.example.com",
		"APP.example.com.:80":   "app.example.com",
		"[2001:dB8::1]:443":     "2001:db8::1",
		"[2001:db8::1]":         "2001:db8::1",
		"192.0.2.1:80":          "192.0.2.1",
		"":                      "",
		"2001:db8::1":           "2001:db8::1", // not a valid Host; kept whole
		"app.example.com:":      "app.example.com",
		"xn--bcher-kva.example": "xn--bcher-kva.example",
	} {
		if got := routeHost(host); got != want {
			t.Errorf("routeHost(%q) = %q, want %q", host, got, want)
		}
	}
}
