package authflows

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/authflows/provider"
)

// withGitHub configures a GitHub provider (never called in these tests).
func withGitHub(c *Config) {
	c.Providers = []provider.Config{{Name: "github", ClientID: "Iv1.x", ClientSecret: "s", RedirectURL: testBaseURL + "/auth/callback/github"}}
}

// An SSO-only sign-in page (--password-sign-in=false) with a provider
// configured: the page offers the provider buttons and no password form
// or reset link, and a password sign-in posted anyway is refused, even
// with the right password. Without a provider the setting changes nothing.
func TestProvidersOnlySignInPage(t *testing.T) {
	e := newTestEnv(t, withGitHub, func(c *Config) { c.ProvidersOnly = true })
	e.CreateUser(t, "ann@example.com", testPassword)
	r := e.NewRequest(http.MethodGet, "/auth/login", nil)
	r.Header.Set("Accept", "text/html")
	page := e.Body(t, e.Do(r))
	if !strings.Contains(page, `href="/auth/login/github?rd=`) {
		t.Errorf("no GitHub button:\n%s", page)
	}
	for _, not := range []string{`name="password"`, `name="email"`, "/auth/forgot"} {
		if strings.Contains(page, not) {
			t.Errorf("the SSO-only page has %q:\n%s", not, page)
		}
	}
	if code := e.ProblemCode(t, e.PostJSON("/auth/login", map[string]string{"email": "ann@example.com", "password": testPassword}), http.StatusForbidden); code != "password_sign_in_off" {
		t.Errorf("password sign-in: code %q, want password_sign_in_off", code)
	}
	form := e.PostForm("/auth/login", url.Values{"email": {"ann@example.com"}, "password": {testPassword}})
	if form.StatusCode != http.StatusForbidden || e.SessionCookie(form) != nil {
		t.Errorf("password form: %d, want 403 and no session", form.StatusCode)
	}

	plain := newTestEnv(t, func(c *Config) { c.ProvidersOnly = true })
	plain.CreateUser(t, "ann@example.com", testPassword)
	if resp := plain.PostJSON("/auth/login", map[string]string{"email": "ann@example.com", "password": testPassword}); resp.StatusCode != http.StatusOK {
		t.Errorf("no provider: password sign-in %d, want 200", resp.StatusCode)
	}
}
