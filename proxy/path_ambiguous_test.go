package proxy

import (
	"net/http"
	"testing"

	"golang.org/x/text/unicode/norm"
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
	pp := liveRules(t, []string{"/static"})
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

// PX5, FA1: paths under the public prefix /static that some upstream reads
// as climbing out of it. Each must need a session on the proxy and on both
// check endpoints, and none may reach the upstream without one.
var readTwoWays = []struct {
	name    string
	folds   bool // NFKC folds it into a path that is not plainly under /static (the premise)
	targets []string
}{
	// The full-width ".", "/" and "\" are not the only characters that NFKC
	// folds into path syntax: ONE DOT LEADER (U+2024) and SMALL FULL STOP
	// (\uFE52) fold to ".", TWO DOT LEADER (U+2025) to "..", HORIZONTAL
	// ELLIPSIS (U+2026) to "..." (which Windows reads as ".."), and SMALL
	// REVERSE SOLIDUS (\uFE68) to "\".
	{"NFKC folds into dots or a backslash", true, []string{
		"/static/%E2%80%A5/private",                // U+2025 "‥" → ".."
		"/static/%E2%80%A4%E2%80%A4/private",       // U+2024 "․" twice → ".."
		"/static/%EF%B9%92%EF%B9%92/private",       // \uFE52 "﹒" twice → ".."
		"/static/.%E2%80%A4/private",               // "." + U+2024 → ".."
		"/static/%E2%80%A6/private",                // U+2026 "…" → "..." (Windows: "..")
		"/static/..%EF%B9%A8private",               // ".." + \uFE68 "﹨" → "..\"
		"/static/%EF%B9%92%EF%B9%92%EF%B9%A8x%2Fy", // "﹒﹒﹨"
	}},
	// NFKC folds NO-BREAK SPACE (U+00A0), the EN to HAIR spaces (U+2002 to
	// U+200A) and IDEOGRAPHIC SPACE (U+3000) to " ": beside dots, the
	// segment is the ".. " that Spring and Windows trim to "..".
	{"NFKC folds into dots and spaces", true, []string{
		"/static/..%E3%80%80/private", // ".." + U+3000 → ".. "
		"/static/..%C2%A0/private",    // ".." + U+00A0 → ".. "
		"/static/%E2%80%82../private", // U+2002 + ".." → " .."
		"/static/.%E2%80%89./private", // "." + U+2009 + "." → ". ."
	}},
	// An overlong UTF-8 form of "." (C0 AE, E0 80 AE) or "/" (C0 AF) is not
	// UTF-8 at all, yet lenient decoders (Tomcat before CVE-2008-2938, old
	// IIS, some Java and PHP stacks) read it as the ASCII character.
	{"overlong UTF-8", false, []string{
		"/static/%C0%AE%C0%AE/private",       // ".." overlong (2 bytes)
		"/static/%E0%80%AE%E0%80%AE/private", // ".." overlong (3 bytes)
		"/static/..%C0%AFprivate",            // "/" overlong
	}},
	// "..%253b" decodes once to "..%3b": an upstream that decodes twice and
	// strips ";params" (Tomcat behind a decoding filter) reads "..;", "..".
	{"double-encoded ..;", false, []string{"/static/..%253b/private", "/static/..%253Bx/private"}},
}

func TestPathsReadTwoWaysAreNotPublic(t *testing.T) {
	public := liveRules(t, []string{"/static"})
	for _, tc := range readTwoWays {
		t.Run(tc.name, func(t *testing.T) {
			for _, target := range tc.targets {
				if !tc.folds {
					continue
				}
				r, err := http.NewRequest(http.MethodGet, "http://app.example.com"+target, nil)
				if err != nil {
					t.Fatal(err)
				}
				if folded := cleanPath(norm.NFKC.String(r.URL.Path)); isPublic(public, folded) {
					t.Fatalf("test premise: %s folds to %q, which is public", target, folded)
				}
			}
			e := checkEnv(t)
			for _, target := range tc.targets {
				if res := e.serve(get(target)); res.StatusCode == http.StatusOK {
					t.Errorf("proxy: %s without a session: %d, forwarded as public", target, res.StatusCode)
				}
				if res := e.serve(forwardAuth(target)); res.StatusCode != http.StatusUnauthorized {
					t.Errorf("forward-auth %s without a session: %d, want 401", target, res.StatusCode)
				}
				if res := e.serve(authRequest("https://app.example.com" + target)); res.StatusCode != http.StatusUnauthorized {
					t.Errorf("auth-request %s without a session: %d, want 401", target, res.StatusCode)
				}
			}
			if n := e.upstream.count(); n != 0 {
				t.Errorf("%d of these paths reached the upstream without a session", n)
			}
		})
	}
}

// PX5: a control byte in the decoded path (next to ".." or anywhere) never
// makes a path public: upstreams that cut at a NUL or drop control bytes
// would read "..\x00" as "..". Signed in, the request still passes.
func TestControlBytesNeverPublic(t *testing.T) {
	targets := []string{
		"/static/..%00/admin",
		"/static/%00../admin",
		"/public/..%0d/admin",
		"/public/..%09/admin",
		"/static/.%00./admin",
		"/static/x%7f",
		"/static/%01",
	}
	for _, target := range targets {
		e := newEnv(t)
		res := e.serve(get(target))
		if e.upstream.count() != 0 {
			t.Errorf("%s reached the upstream without a session (status %d)", target, res.StatusCode)
		}
		if res.StatusCode != http.StatusFound {
			t.Errorf("%s: status %d, want the sign-in redirect", target, res.StatusCode)
		}
		res = e.serve(withCookie(get(target), e.signIn(sessionID)))
		if res.StatusCode != http.StatusOK || e.upstream.count() != 1 {
			t.Errorf("%s signed in: status %d", target, res.StatusCode)
		}
	}
	// Clean public paths are unchanged.
	e := newEnv(t)
	if res := e.serve(get("/static/app.js")); res.StatusCode != http.StatusOK {
		t.Errorf("/static/app.js: %d", res.StatusCode)
	}
}
