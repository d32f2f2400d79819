package proxy

import (
	"github.com/gatehouse-auth/gatehouse/proxy/route"

	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCleanPath(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "/"},
		{"/", "/"},
		{"x", "/x"},
		{"/a/b", "/a/b"},
		{"/a/b/", "/a/b/"},
		{"//x", "/x"},
		{"/a//b///", "/a/b/"},
		{"/./x", "/x"},
		{"/auth/../x", "/x"},
		{"/../../x", "/x"},
		{"/..", "/"},
		{"/a/..", "/"},
		{"/a/../", "/"},
		{"/x/../y", "/y"},
		{"/a/b/../../c/", "/c/"},
		{"/a/..;/b", "/a/..;/b"}, // a segment name to path.Clean; see ambiguous
	}
	for _, tc := range cases {
		if got := cleanPath(tc.in); got != tc.want {
			t.Errorf("cleanPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// PX5 over the wire: the request line is sent verbatim. Without a session
// nothing reaches the upstream; with one, the upstream sees exactly the
// cleaned path the decision was made on.
func TestPathTricks(t *testing.T) {
	cases := []struct {
		target   string
		upstream string // request URI the upstream sees when signed in; "" if it goes to /auth/
		public   bool   // reaches the upstream without a session
	}{
		{"/auth/../x", "/x", false},
		{"/auth/%2e%2e/x", "/x", false},
		{"/auth/%2E%2E/x", "/x", false},
		{"/auth/.%2e/x", "/x", false},
		{"/auth%2f..%2fx", "/x", false},
		{"//x", "/x", false},
		{"///x//y", "/x/y", false},
		{"/public/../x", "/x", false},
		{"/public/%2e%2e/x", "/x", false},
		{"/public%2f..%2fx", "/x", false},
		{"/static/..%2f..%2fx", "/x", false},
		{"/%2e%2e/", "/", false},
		{"/%2e%2e", "/", false},
		{"/x/..%2fy", "/y", false},
		{"/x/%2e/y", "/x/y", false},
		{"/./x", "/x", false},
		{"/static/../admin?a=1", "/admin?a=1", false},
		{"/static/..;/admin", "/static/..;/admin", false},
		{"/static/..%3b/admin", "/static/..;/admin", false},
		{"/static/..%5cadmin", "/static/..%5Cadmin", false},
		{"/static%2fapp.js", "/static/app.js", true},
		{"/static/./app.js", "/static/app.js", true},
		{"/x/../static/app.js", "/static/app.js", true},
		{"/static/a%20b", "/static/a%20b", true},
		{"/static/a%3Fb?c=d", "/static/a%3Fb?c=d", true},
		{"/x/%2e%2e/auth/login", "", false},
		{"http:admin", "/", false}, // opaque request target
		{"http:/static/x", "/static/x", true},
		{"http://evil.example/x/../admin", "/admin", false}, // absolute form
	}
	for _, signedIn := range []bool{false, true} {
		e := newEnv(t)
		e.signIn(sessionID)
		server := httptest.NewServer(e.proxy)
		addr := strings.TrimPrefix(server.URL, "http://")
		cookie := ""
		if signedIn {
			cookie = "Cookie: gatehouse_session=" + sessionID + "\r\n"
		}
		for _, tc := range cases {
			before, authBefore := e.upstream.count(), e.auth.count()
			res := rawRequest(t, addr, "GET", tc.target, cookie)
			res.Body.Close()
			reached := e.upstream.count() > before
			switch {
			case tc.upstream == "":
				if reached || e.auth.count() == authBefore {
					t.Errorf("%s: should go to the auth handler only (status %d)", tc.target, res.StatusCode)
				}
			case !signedIn && reached != tc.public:
				t.Errorf("%s without session: reached upstream %v, want %v (status %d)", tc.target, reached, tc.public, res.StatusCode)
			case signedIn && !reached:
				t.Errorf("%s with session: not forwarded (status %d)", tc.target, res.StatusCode)
			case reached:
				if got := e.upstream.last(t).RequestURI; got != tc.upstream {
					t.Errorf("%s: upstream saw %q, want %q", tc.target, got, tc.upstream)
				}
			}
			if !reached && tc.upstream != "" && !signedIn && res.StatusCode != http.StatusFound {
				t.Errorf("%s: status %d, want the redirect", tc.target, res.StatusCode)
			}
		}
		server.Close()
	}
}

func TestDeniedRedirectCarriesCleanedPath(t *testing.T) {
	e := newEnv(t)
	server := httptest.NewServer(e.proxy)
	defer server.Close()
	for target, want := range map[string]string{
		"/static/%2e%2e/admin/?x=%2e%2e":           "https://gate.example.com/auth/login?rd=%2Fadmin%2F%3Fx%3D%252e%252e",
		"http://evil.example//x/../admin?next=//e": "https://gate.example.com/auth/login?rd=%2Fadmin%3Fnext%3D%2F%2Fe",
	} {
		res := rawRequest(t, strings.TrimPrefix(server.URL, "http://"), "GET", target, "")
		res.Body.Close()
		if got := res.Header.Get("Location"); got != want {
			t.Errorf("%s: Location %q, want %q", target, got, want)
		}
	}
}

// isPublic reports whether decide would let a GET of the cleaned path p
// through rs without a session.
func isPublic(rs RouteRules, p string) bool {
	return (&Proxy{routes: rs}).ruleOf(target{method: http.MethodGet, host: "app.example.com", path: p}).Allow == route.Public
}
