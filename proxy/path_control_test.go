package proxy

import (
	"net/http"
	"testing"
)

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
