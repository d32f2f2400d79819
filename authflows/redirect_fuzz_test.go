package authflows

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzLocalRedirect: whatever rd is, the redirect target is a path on this
// site: it starts with one "/" (not "//" or "/\"), holds no control byte or
// backslash, and parses with no scheme, host or user (OA10).
func FuzzLocalRedirect(f *testing.F) {
	for _, s := range []string{
		"/", "/app?x=1", "//evil", "/\\evil", "/%09/evil", "/%2f/evil", "https:evil", "javascript:x",
		"https://base@evil", "/\t/evil", "/a\r\nb", "\\\\evil", "/%5cevil", "/@evil", "/?next=//evil",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rd string) {
		got := localRedirect(rd)
		if got == "/" {
			return
		}
		if got != rd {
			t.Fatalf("localRedirect(%q) = %q: neither rd nor /", rd, got)
		}
		if !strings.HasPrefix(got, "/") || strings.HasPrefix(got, "//") || strings.HasPrefix(got, "/\\") {
			t.Fatalf("localRedirect(%q) = %q: not a local path", rd, got)
		}
		for i := 0; i < len(got); i++ {
			if c := got[i]; c < 0x20 || c == 0x7f || c == '\\' {
				t.Fatalf("localRedirect(%q) keeps byte %#x", rd, c)
			}
		}
		u, err := url.Parse(got)
		if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
			t.Fatalf("localRedirect(%q) = %q parses as %+v (%v)", rd, got, u, err)
		}
		if p := u.Path; strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\\t\r\n") {
			t.Fatalf("localRedirect(%q) = %q decodes to %q", rd, got, p)
		}
		// What a browser resolves it to stays on this site.
		base, _ := url.Parse("https://gate.example.com/auth/login")
		if abs := base.ResolveReference(u); abs.Host != base.Host || abs.Scheme != base.Scheme {
			t.Fatalf("localRedirect(%q) = %q resolves to %s", rd, got, abs)
		}
	})
}
