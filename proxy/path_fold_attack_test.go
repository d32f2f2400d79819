package proxy

import (
	"net/http"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// PX5, FA1 (outside attack): the full-width ".", "/" and "\" are not the
// only characters that NFKC folds into path syntax. ONE DOT LEADER (U+2024)
// and SMALL FULL STOP (\uFE52) fold to ".", TWO DOT LEADER (U+2025) to
// "..", HORIZONTAL ELLIPSIS (U+2026) to "..." (which Windows reads as ".."),
// and SMALL REVERSE SOLIDUS (\uFE68) to "\". An upstream that folds the
// path (the very upstream the full-width rule is there for) reads each of
// these as a climb out of the public prefix, so they must need a session
// like the full-width forms do.
var nfkcFoldedPublicPaths = []string{
	"/static/%E2%80%A5/private",                // U+2025 "‥" → ".."
	"/static/%E2%80%A4%E2%80%A4/private",       // U+2024 "․" twice → ".."
	"/static/%EF%B9%92%EF%B9%92/private",       // \uFE52 "﹒" twice → ".."
	"/static/.%E2%80%A4/private",               // "." + U+2024 → ".."
	"/static/%E2%80%A6/private",                // U+2026 "…" → "..." (Windows: "..")
	"/static/..%EF%B9%A8private",               // ".." + \uFE68 "﹨" → "..\"
	"/static/%EF%B9%92%EF%B9%92%EF%B9%A8x%2Fy", // "﹒﹒﹨"
}

func TestNFKCFoldedDotsAreNotPublic(t *testing.T) {
	// The premise: each of these folds to a path that leaves /static.
	for _, target := range nfkcFoldedPublicPaths {
		r, err := http.NewRequest(http.MethodGet, "http://app.example.com"+target, nil)
		if err != nil {
			t.Fatal(err)
		}
		folded := cleanPath(norm.NFKC.String(r.URL.Path))
		if pp, _ := parsePublicPaths([]string{"/static"}); pp.match(folded) && !ambiguous(folded) {
			t.Fatalf("test premise: %s folds to %q, still under /static", target, folded)
		}
	}

	e := checkEnv(t)
	for _, target := range nfkcFoldedPublicPaths {
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
		t.Errorf("%d NFKC-folding paths reached the upstream without a session", n)
	}
}

// PX5 (outside attack): an overlong UTF-8 form of "." (C0 AE, E0 80 AE) or
// "/" (C0 AF) is not UTF-8 at all, yet lenient decoders (Tomcat before
// CVE-2008-2938, old IIS, some Java and PHP stacks) read it as the ASCII
// character. Gatehouse passes the bytes on untouched ("/static/%C0%AE%C0%AE/
// private" reaches the upstream as is) and calls the path public. A
// decoded path that is not valid UTF-8 can be read two ways and should
// need a session.
var overlongPublicPaths = []string{
	"/static/%C0%AE%C0%AE/private",       // ".." overlong (2 bytes)
	"/static/%E0%80%AE%E0%80%AE/private", // ".." overlong (3 bytes)
	"/static/..%C0%AFprivate",            // "/" overlong
}

func TestOverlongUTF8DotsAreNotPublic(t *testing.T) {
	e := checkEnv(t)
	for _, target := range overlongPublicPaths {
		if res := e.serve(get(target)); res.StatusCode == http.StatusOK {
			t.Errorf("proxy: %s without a session: %d, forwarded as public", target, res.StatusCode)
		}
		if res := e.serve(forwardAuth(target)); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("forward-auth %s without a session: %d, want 401", target, res.StatusCode)
		}
	}
	if n := e.upstream.count(); n != 0 {
		t.Errorf("%d overlong-UTF-8 paths reached the upstream without a session", n)
	}
}

// PX5 (outside attack): "..;" is ambiguous (Tomcat reads it as ".."), and
// so is an escape of "." or "/" left after the one decoding (an upstream
// that decodes again). Their combination is not caught: "..%253b" decodes
// once to "..%3b", reaches the upstream as "..%253b", and an upstream that
// decodes twice and strips ";params" (Tomcat behind a decoding filter)
// reads "..;" and then "..".
func TestDoubleEncodedDotDotSemicolonIsNotPublic(t *testing.T) {
	e := checkEnv(t)
	for _, target := range []string{"/static/..%253b/private", "/static/..%253Bx/private"} {
		if res := e.serve(get(target)); res.StatusCode == http.StatusOK {
			t.Errorf("proxy: %s without a session: %d, forwarded as public", target, res.StatusCode)
		}
		if res := e.serve(forwardAuth(target)); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("forward-auth %s without a session: %d, want 401", target, res.StatusCode)
		}
	}
}
