package proxy

import (
	"net/http"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// PX5, FA1 (outside attacks and a review): paths under the public prefix
// /static that some upstream reads as climbing out of it. Each must need a
// session on the proxy and on both check endpoints, and none may reach the
// upstream without one.
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
	public, err := parsePublicPaths([]string{"/static"})
	if err != nil {
		t.Fatal(err)
	}
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
