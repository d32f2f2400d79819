package proxy

import (
	"net/http"
	"strings"
	"testing"
)

// Fuzz targets of the request path's parsers. `go test` runs their seeds
// (here and in testdata/fuzz); `make fuzz` explores each for a while.

// FuzzCleanPath: the cleaned path is canonical (absolute, idempotent, no
// "." or ".." segment, no empty segment) and a path that matches a public
// prefix holds no control byte, backslash or ";"-dressed dot segment.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{
		"", "/", "//x", "/auth/../x", "/static/..\x00/admin", "/static/.\x00./x", "/public/..;/x",
		"/static\\..\\x", "/a/./b/../../c/", "x", "/static/", "/staticky", "/%2e%2e/", "/static/\x7f",
	} {
		f.Add(s)
	}
	public := liveRules(f, []string{"/static", "/public/"})
	f.Fuzz(func(t *testing.T, p string) {
		c := cleanPath(p)
		if !strings.HasPrefix(c, "/") {
			t.Fatalf("cleanPath(%q) = %q: not absolute", p, c)
		}
		if again := cleanPath(c); again != c {
			t.Fatalf("cleanPath not idempotent: %q → %q → %q", p, c, again)
		}
		for i, segment := range strings.Split(c[1:], "/") {
			last := i == strings.Count(c[1:], "/")
			if segment == "." || segment == ".." || segment == "" && !last {
				t.Fatalf("cleanPath(%q) = %q keeps segment %q", p, c, segment)
			}
		}
		if isPublic(public, c) {
			if strings.ContainsFunc(c, func(r rune) bool { return r < 0x20 || r == 0x7f }) || strings.Contains(c, "\\") {
				t.Fatalf("%q is public with a control byte or backslash", c)
			}
			for segment := range strings.SplitSeq(c, "/") {
				if s, _, _ := strings.Cut(segment, ";"); s == "." || s == ".." {
					t.Fatalf("%q is public with a dot segment %q", c, segment)
				}
			}
		}
	})
}

// FuzzHeaderScrubber: whatever the spelling of a header name, after
// removeClientHeaders no name left is an identity or routing header, and a
// URL-rebuilding header is left only from a trusted proxy in dash spelling.
func FuzzHeaderScrubber(f *testing.F) {
	for _, s := range []string{
		"X-Forwarded-User", "x_forwarded_email", "X-AUTH-REQUEST-USER", "Remote_User", "X-Forwarded-Prefix",
		"x_forwarded_prefix", "X-Envoy-Original-Path", "Forwarded", "X-Forwarded-For", "X-Original-URL", "Accept",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, name string, trusted bool) {
		h := http.Header{name: {"v"}, http.CanonicalHeaderKey(name): {"v"}}
		removeClientHeaders(h, trusted)
		for left := range h {
			if forbiddenHeader(left) {
				t.Fatalf("%q (from %q) survived", left, name)
			}
			if urlRebuildingHeader(left) && (!trusted || strings.Contains(left, "_")) {
				t.Fatalf("URL-rebuilding %q survived (trusted=%v)", left, trusted)
			}
		}
		// Spelled with '_' or in any case, a name means what its dash,
		// lower-case form means.
		norm := strings.ToLower(strings.ReplaceAll(name, "_", "-"))
		if forbiddenHeader(name) != forbiddenHeader(norm) && !strings.Contains(name, "_") {
			t.Fatalf("%q and %q judged differently", name, norm)
		}
	})
}
