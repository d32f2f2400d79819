package proxy

import (
	"net/http"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// Review of c054111 (PX5, FA1): ambiguous refuses a character that NFKC
// folds into ". / \ % ;", and separately a segment of dots and spaces
// (".. ", Spring and Windows trim the spaces). It does not refuse their
// combination: NFKC folds NO-BREAK SPACE (U+00A0), the EN/EM/THIN spaces
// (U+2002..U+200A) and IDEOGRAPHIC SPACE (U+3000) to " ", so "..\u3000"
// reaches an upstream that folds as ".. ", the very segment ambiguous
// refuses when it arrives in ASCII. foldsIntoSyntax counts only the five
// syntax characters, so the fold goes unseen and the path is public.
// Running the segment checks on the NFKC form as well (when it differs)
// would close every such pairing.
var nfkcFoldedSpacePublicPaths = []string{
	"/static/..%E3%80%80/private", // ".." + U+3000 → ".. "
	"/static/..%C2%A0/private",    // ".." + U+00A0 → ".. "
	"/static/%E2%80%82../private", // U+2002 + ".." → " .."
	"/static/.%E2%80%89./private", // "." + U+2009 + "." → ". ."
}

func TestNFKCFoldedSpaceDotsAreNotPublic(t *testing.T) {
	// The premise, as TestNFKCFoldedDotsAreNotPublic states it: the folded
	// path is one ambiguous refuses.
	for _, target := range nfkcFoldedSpacePublicPaths {
		r, err := http.NewRequest(http.MethodGet, "http://app.example.com"+target, nil)
		if err != nil {
			t.Fatal(err)
		}
		folded := cleanPath(norm.NFKC.String(r.URL.Path))
		if pp, _ := parsePublicPaths([]string{"/static"}); pp.match(folded) {
			t.Fatalf("test premise: %s folds to %q, which is public", target, folded)
		}
	}

	e := checkEnv(t)
	for _, target := range nfkcFoldedSpacePublicPaths {
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
		t.Errorf("%d paths that NFKC folds into a dots-and-spaces segment reached the upstream without a session", n)
	}
}
