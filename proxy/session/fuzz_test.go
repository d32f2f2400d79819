package session

import (
	"net/http"
	"slices"
	"testing"
)

// FuzzSessionCookie: reading never panics, and once the session cookie is
// removed from the Cookie header, no reader finds one there (SS8), while a
// cookie of another name stays. `go test` runs the seeds (here and in
// testdata/fuzz); `make fuzz` explores.
func FuzzSessionCookie(f *testing.F) {
	for _, s := range []string{
		"gatehouse_session=abc", "a=1; gatehouse_session=abc; b=2", " gatehouse_session = \"abc\" ",
		"gatehouse_session=a; gatehouse_session=b", "=gatehouse_session=x", ";;;", "gatehouse_session",
		"x=gatehouse_session=y", "gatehouse_session=\x00", "\tgatehouse_session\t=\tv\t;keep=1", "keep",
	} {
		f.Add(s)
	}
	const name = cookieName
	f.Fuzz(func(t *testing.T, line string) {
		h := http.Header{"Cookie": {line, "other_cookie=1"}}
		_ = cookieValue(h, name)
		RemoveCookies(h, name)
		if v := cookieValue(h, name); v != "" {
			t.Fatalf("after removing it from %q, the session cookie reads %q (header %q)", line, v, h["Cookie"])
		}
		r := &http.Request{Header: h}
		for _, c := range r.Cookies() {
			if c.Name == name {
				t.Fatalf("after removing it from %q, net/http reads a session cookie %q", line, c.Value)
			}
		}
		if !slices.Contains(h["Cookie"], "other_cookie=1") {
			t.Fatalf("removing the session cookie from %q lost another cookie: %q", line, h["Cookie"])
		}
	})
}
