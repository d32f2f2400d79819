package authflows

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// OA9: unlinking is refused when it would leave the user no way to sign in;
// otherwise DELETE answers 204 and the account page's form a 303 back.
func TestOAuthUnlink(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})

	// A password-less user created by Google login, then GitHub linked.
	e.google.SetNext(oauthtest.Account{Subject: "g-1", Email: "hank@example.com", EmailVerified: true})
	b := e.newBrowser()
	if a := b.flow("/auth/login/google"); a.status != http.StatusSeeOther {
		t.Fatalf("login: %d %s", a.status, a.body)
	}
	me, _ := b.me()
	e.github.SetNext(oauthtest.Account{Subject: "5", Email: "hank@example.com", EmailVerified: true})
	if a := b.flow("/auth/link/github"); a.status != http.StatusSeeOther {
		t.Fatalf("link: %d %s", a.status, a.body)
	}

	if a := b.do(http.MethodDelete, "/auth/link/github"); a.status != http.StatusNoContent {
		t.Fatalf("unlink github: %d %s", a.status, a.body)
	}
	if a := b.do(http.MethodDelete, "/auth/link/github"); a.status != http.StatusNotFound || a.problemCode() != "not_linked" {
		t.Errorf("unlink again: %d %s, want 404 not_linked", a.status, a.body)
	}
	a := b.do(http.MethodDelete, "/auth/link/google")
	if a.status != http.StatusConflict || a.problemCode() != "last_login_method" {
		t.Errorf("unlink the last method: %d %s, want 409 last_login_method", a.status, a.body)
	}
	if ids := e.identities(me.ID); len(ids) != 1 || ids[0].Provider != "google" {
		t.Errorf("identities = %+v, want google kept", ids)
	}

	// With a password, the only identity can go; the form variant.
	pw := e.newUser("ivy@example.com", true)
	b2 := e.newBrowser()
	b2.signIn(pw)
	e.github.SetNext(oauthtest.Account{Subject: "6", Email: "ivy@example.com", EmailVerified: true})
	b2.flow("/auth/link/github")
	if a := b2.postForm("/auth/unlink/github"); a.status != http.StatusSeeOther || a.location() != "/auth/account?notice=unlinked" {
		t.Errorf("form unlink: %d to %q (%s)", a.status, a.location(), a.body)
	}
	if ids := e.identities(pw.ID); len(ids) != 0 {
		t.Errorf("identities after unlink = %+v", ids)
	}
	if !e.hasEvent("oauth_unlinked") {
		t.Errorf("no oauth_unlinked event")
	}
}

// Unlinking needs a session: 401 in both modes.
func TestOAuthUnlinkWithoutSession(t *testing.T) {
	for _, mode := range []web.Mode{web.ModeRedirect, web.Mode401} {
		e := newOAuthEnv(t, oauthEnvOptions{mode: mode})
		b := e.newBrowser()
		if a := b.do(http.MethodDelete, "/auth/link/google"); a.status != http.StatusUnauthorized || a.problemCode() != "unauthenticated" {
			t.Errorf("%s DELETE: %d %s", mode, a.status, a.body)
		}
		if a := b.postForm("/auth/unlink/google"); a.status != http.StatusUnauthorized {
			t.Errorf("%s form: %d %s", mode, a.status, a.body)
		}
	}
}

// The account page shows the email, the password state, linked accounts
// with Unlink forms, Link buttons for the others, and sign out.
func TestOAuthAccountPage(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	u := e.newUser("judy@example.com", true)
	b := e.newBrowser()
	b.signIn(u)
	e.github.SetNext(oauthtest.Account{Subject: "3", Email: "judy.gh@example.com", EmailVerified: true})
	b.flow("/auth/link/github")

	a := b.get("/auth/account")
	if a.status != http.StatusOK || !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") {
		t.Fatalf("account page: %d %s", a.status, a.body)
	}
	for _, want := range []string{
		"judy@example.com",
		"Password: set",
		"judy.gh@example.com",
		`href="/auth/unlink/github"`,
		`href="/auth/link/google?rd=%2Fauth%2Faccount%3Fnotice%3Dlinked"`,
		`<a class="button" href="/">Back to `,
		`action="/auth/logout"`,
	} {
		if !strings.Contains(a.body, want) {
			t.Errorf("account page lacks %q:\n%s", want, a.body)
		}
	}
	if strings.Contains(a.body, `href="/auth/unlink/google"`) {
		t.Error("Unlink offered for a provider that is not linked")
	}
	if a.header.Get("Cache-Control") != "no-store" {
		t.Error("account page is cacheable")
	}

	// The Link button works from the page and comes back to it.
	e.google.SetNext(oauthtest.Account{Subject: "g-3", Email: "judy@example.com", EmailVerified: true})
	if r := b.flow("/auth/link/google?rd=" + url.QueryEscape("/auth/account")); r.status != http.StatusSeeOther || r.location() != "/auth/account" {
		t.Errorf("link from the page: %d to %q", r.status, r.location())
	}
}

// A password-less user with one identity is told it is the only way in.
func TestOAuthAccountPageOnlyMethod(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	e.google.SetNext(oauthtest.Account{Subject: "g-9", Email: "ken@example.com", EmailVerified: true})
	b := e.newBrowser()
	b.flow("/auth/login/google")
	a := b.get("/auth/account")
	if !strings.Contains(a.body, "your only way to sign in") || strings.Contains(a.body, `href="/auth/unlink/google"`) || !strings.Contains(a.body, "Set a password") {
		t.Errorf("account page of a password-less user:\n%s", a.body)
	}
}

// Without a session the account page answers per --mode.
func TestOAuthAccountPageWithoutSession(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	a := e.newBrowser().get("/auth/account")
	if a.status != http.StatusFound || a.location() != e.base+"/auth/login?rd=%2Fauth%2Faccount" {
		t.Errorf("%d to %q", a.status, a.location())
	}
	e401 := newOAuthEnv(t, oauthEnvOptions{mode: web.Mode401})
	if a := e401.newBrowser().get("/auth/account"); a.status != http.StatusUnauthorized {
		t.Errorf("401 mode: %d", a.status)
	}
}

// Fail closed: when the store cannot tell whether the request has a
// session, the link start, the account page and unlinking answer 503
// store_unavailable, and no flow is started.
func TestOAuthSessionStoreFailure(t *testing.T) {
	e := newTestEnv(t, withTestProviders, func(c *Config) {
		c.Store = faultyStore{Store: c.Store.(storage.Store), fail: failing("Session")}
	})
	cookie := &http.Cookie{Name: e.Config.CookieName, Value: newSecret()}
	for _, r := range []*http.Request{
		e.NewRequest(http.MethodGet, "/auth/link/github", nil),
		e.NewRequest(http.MethodGet, "/auth/account", nil),
		e.NewRequest(http.MethodDelete, "/auth/link/github", nil),
	} {
		resp := e.Do(r, cookie)
		if code := e.ProblemCode(t, resp, http.StatusServiceUnavailable); code != "store_unavailable" {
			t.Errorf("%s %s: code %q, want store_unavailable", r.Method, r.URL, code)
		}
		for _, c := range resp.Cookies() {
			if c.Name == transactionCookie {
				t.Errorf("%s %s: a flow was started", r.Method, r.URL)
			}
		}
	}
}
