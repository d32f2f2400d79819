package authflows

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
)

// README (--oidc-logout): POST /auth/logout of an oidc session ends the
// session and continues to the OpenID Provider's end_session_endpoint with
// the sign-in's ID token as id_token_hint and {base-url}/auth/login as
// post_logout_redirect_uri; a session of another kind, or without the
// flag, signs out as before.
func TestOIDCLogoutContinuesToProvider(t *testing.T) {
	idp := newTestIdP(t, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	idp.endSession = idp.Issuer() + "/logout"
	key := testTokenKey(t)
	e := newOAuthEnv(t, oauthEnvOptions{providers: []string{"github"}, oidc: idp.config("groups"),
		edit: func(c *Config) { c.TokenKey, c.OIDCLogout = key, true }})
	b := signInOIDC(t, e, idp, "dana", "op-5")
	a := b.postForm("/auth/logout")
	if a.status != http.StatusSeeOther {
		t.Fatalf("logout: %d %s", a.status, a.body)
	}
	to, err := url.Parse(a.location())
	if err != nil || to.Scheme+"://"+to.Host+to.Path != idp.endSession {
		t.Fatalf("logout went to %q, want the end_session_endpoint %s", a.location(), idp.endSession)
	}
	q := to.Query()
	if q.Get("post_logout_redirect_uri") != e.base+"/auth/login" {
		t.Errorf("post_logout_redirect_uri %q, want %s/auth/login", q.Get("post_logout_redirect_uri"), e.base)
	}
	hint, err := idp.Keypair.VerifyJWT(q.Get("id_token_hint"), idp.Now)
	if err != nil || hint == nil {
		t.Errorf("id_token_hint is not an ID token of the provider: %v", err)
	}
	if _, ok := b.me(); ok {
		t.Error("the session stands after the logout")
	}

	e.github.SetNext(oauthtest.Account{Subject: "906", Email: "g@example.com", EmailVerified: true})
	g := e.newBrowser()
	if a := g.flow("/auth/login/github"); a.status != http.StatusSeeOther {
		t.Fatalf("github sign-in: %d", a.status)
	}
	if a := g.postForm("/auth/logout"); a.status != http.StatusSeeOther || a.location() != "/auth/login" {
		t.Errorf("logout of a github session: %d to %q, want 303 to /auth/login", a.status, a.location())
	}
}
