package authflows

import (
	"net/http"
	"net/url"
	"testing"
)

func TestAbsoluteRedirect(t *testing.T) {
	https, _ := url.Parse("https://auth.example.com")
	http_, _ := url.Parse("http://127.0.0.1:8080")
	allowed := []string{"app.example.com", "wiki.example.com"}
	cases := []struct {
		base *url.URL
		in   string
		want string
	}{
		{https, "https://app.example.com/x?y=1", "https://app.example.com/x?y=1"},
		{https, "https://APP.example.com/x", "https://APP.example.com/x"},
		{https, "https://app.example.com:8443/x", "https://app.example.com:8443/x"},
		{https, "https://auth.example.com/account", "https://auth.example.com/account"},
		{https, "https://wiki.example.com", "https://wiki.example.com"},
		{https, "http://app.example.com/x", "/"}, // https base: https only
		{https, "https://evil.example/x", "/"},
		{https, "https://app.example.com.evil.example/x", "/"},
		{https, "https://evilapp.example.com/x", "/"},
		{https, "https://app.example.com@evil.example/x", "/"},
		{https, "https://user:pw@app.example.com/x", "/"},
		{https, `https://app.example.com\@evil.example/x`, "/"},
		{https, "https://evil.example\\.app.example.com/", "/"},
		{https, "https://app.example.com/\tx", "/"},
		{https, "https:app.example.com/x", "/"},
		{https, "javascript:alert(1)", "/"},
		{https, "data:text/html,x", "/"},
		{https, "ftp://app.example.com/x", "/"},
		{https, "//app.example.com/x", "/"}, // scheme-relative: refused by the local rules
		{https, "https://%61pp.example.com/x", "/"},
		{https, "https://app.example.com%2f@evil.example/", "/"},
		{http_, "http://127.0.0.1:8080/app?a=b", "http://127.0.0.1:8080/app?a=b"},
		{http_, "http://127.0.0.1:9999/app", "/"}, // base's host is host:port
		{http_, "http://app.example.com/x", "http://app.example.com/x"},
		{http_, "/local?x=1", "/local?x=1"},
	}
	for _, tc := range cases {
		h := &core{cfg: Config{BaseURL: tc.base, AllowedRedirectHosts: allowed}}
		if got := h.redirectTarget(tc.in); got != tc.want {
			t.Errorf("redirectTarget(%q) with base %s = %q, want %q", tc.in, tc.base, got, tc.want)
		}
	}
}

// After a password sign-in, an allowed absolute rd is where the browser goes.
func TestLoginAbsoluteRedirect(t *testing.T) {
	e := newTestEnv(t, func(c *Config) {
		c.BaseURL, _ = url.Parse("https://auth.example.com")
		c.CookieDomain = "example.com"
		c.AllowedRedirectHosts = []string{"app.example.com"}
	})
	e.CreateUser(t, "ada@example.com", "correct horse battery staple")
	for _, tc := range []struct{ rd, want string }{
		{"https://app.example.com/dash?x=1", "https://app.example.com/dash?x=1"},
		{"https://evil.example/", "/"},
	} {
		r := e.FormRequest("/auth/login", url.Values{"email": {"ada@example.com"}, "password": {"correct horse battery staple"}, "rd": {tc.rd}})
		r.Host = "auth.example.com"
		r.Header.Set("Origin", "https://auth.example.com")
		res := e.Do(r)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != tc.want {
			t.Fatalf("rd %q: status %d, Location %q, want 303 to %q", tc.rd, res.StatusCode, res.Header.Get("Location"), tc.want)
		}
		c := e.SessionCookie(res)
		if c == nil || c.Domain != "example.com" {
			t.Fatalf("session cookie %v, want Domain=example.com", c)
		}
	}
}
