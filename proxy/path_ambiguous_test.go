package proxy

import (
	"net/http"
	"testing"
)

// PX5, FA1: a public path that some upstream would read as climbing out of
// the public prefix is not public. Gatehouse decodes once and resolves
// "." and ".."; upstreams that also trim spaces or tabs from segments
// (Spring's path matcher, Windows), drop control bytes, decode a second
// time, or fold full-width characters (NFKC) would turn these into ".."
// or "/" and serve the protected path behind. With forward-auth the
// upstream gets the raw original request, so the check endpoints must
// refuse them like the proxy does; a session makes them pass.
var ambiguousPublicPaths = []string{
	"/static/..%20/private",    // ".. " trimmed
	"/static/%20../private",    // " .." trimmed
	"/static/..%09/private",    // tab trimmed
	"/static/.../private",      // Windows reads "..." as ".."
	"/static/.%00./private",    // NUL dropped
	"/static/..%0d%0a/private", // CR LF
	"/static/..%7f/private",    // DEL
	"/static/..%252f/private",  // decoded twice: "../"
	"/static/%252e%252e/private",
	"/static/..%255cprivate",
	"/static/%EF%BC%8E%EF%BC%8E/private", // full-width ".." (NFKC)
	"/static/..%EF%BC%8Fprivate",         // full-width "/"
	"/static/..%EF%BC%BCprivate",         // full-width "\"
}

func TestAmbiguousPublicPathsNeedASession(t *testing.T) {
	pp, err := parsePublicPaths([]string{"/static"})
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range ambiguousPublicPaths {
		r, err := http.NewRequest(http.MethodGet, "http://app.example.com"+target, nil)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		if p := cleanPath(r.URL.Path); isPublic(pp, p) {
			t.Errorf("%s (cleaned %q) is public", target, p)
		}
	}
	// Ordinary public names stay public.
	for _, p := range []string{"/static/app.js", "/static/a b.css", "/static/v1.2.3/x.js", "/static/.well-known/x", "/static/%E2%82%AC.png", "/static/a..b", "/static/x%25y"} {
		r, _ := http.NewRequest(http.MethodGet, "http://app.example.com"+p, nil)
		if !isPublic(pp, cleanPath(r.URL.Path)) {
			t.Errorf("%s is no longer public", p)
		}
	}
}

// The check endpoints judge the raw original request, which the upstream
// gets as it is: the path before cleaning counts too. Through the proxy,
// the upstream gets the cleaned "/static/private" instead, which is public.
var ambiguousBeforeCleaning = []string{
	"/static/x/..%00/../../private", // NUL dropped: "/static/x/../../../private"
	"/static/x/..%20/../../private", // space trimmed
	"/static/x/.../../../private",
}

func TestAmbiguousPublicPathsOnTheCheckEndpoints(t *testing.T) {
	e := checkEnv(t)
	for _, target := range append(ambiguousPublicPaths, ambiguousBeforeCleaning...) {
		if res := e.serve(forwardAuth(target)); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("forward-auth %s without a session: %d, want 401", target, res.StatusCode)
		}
		if res := e.serve(authRequest("https://app.example.com" + target)); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("auth-request %s without a session: %d, want 401", target, res.StatusCode)
		}
	}
	id := e.signIn(sessionID)
	for _, target := range append(ambiguousPublicPaths, ambiguousBeforeCleaning...) {
		if res := e.serve(withCookie(forwardAuth(target), id)); res.StatusCode != http.StatusOK {
			t.Errorf("forward-auth %s with a session: %d, want 200", target, res.StatusCode)
		}
	}
}

func TestAmbiguousPublicPathsThroughTheProxy(t *testing.T) {
	e := newEnv(t)
	for _, target := range ambiguousPublicPaths {
		e.serve(get(target))
	}
	if n := e.upstream.count(); n != 0 {
		t.Fatalf("%d ambiguous public paths reached the upstream without a session", n)
	}
}
