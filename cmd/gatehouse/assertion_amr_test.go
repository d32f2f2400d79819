package main

import (
	"net/http"
	"path/filepath"
	"slices"
	"testing"

	"github.com/oauth2-proxy/mockoidc"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
)

// The assertion's amr says how the session signed in (CONTRACT "Signed
// identity for the upstream": pwd, google, github or oidc), through the real
// wiring: each sign-in, then the token the upstream receives, verified
// against the published key set the way an app would.
func TestAssertionAMREndToEnd(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	addUser(t, db, "alice@example.com", testPassword)
	r := newProviderRig(t, db, "--open-signup")
	jwks := fetchJWKS(t, r.g.URL+"/auth/.well-known/jwks.json")

	amrOf := func(c *http.Client) []any {
		t.Helper()
		_, claims := verifyWith(t, jwks, upstreamAssertion(t, c, r.g), r.g.URL, r.g.URL)
		amr, _ := claims["amr"].([]any)
		return amr
	}

	c := newClient()
	login(t, c, r.g.URL, "alice@example.com", testPassword)
	if got := amrOf(c); !slices.Equal(got, []any{"pwd"}) {
		t.Errorf("password sign-in: amr %v, want [pwd]", got)
	}

	for _, a := range []account{
		{name: "github", provider: "github", github: ghAccount("7", "gh@idp.example", nil, nil)},
		{name: "google", provider: "google", github: oauthtest.Account{Subject: "g7", Email: "ann@corp.example", EmailVerified: true}},
		{name: "oidc", provider: "oidc", oidc: &mockoidc.MockUser{Subject: "o7", Email: "kim@idp.example", EmailVerified: true}},
	} {
		r.next(a)
		c := newClient()
		if status, got := r.signIn(c, a.provider); status != http.StatusSeeOther || got != "/app" {
			t.Fatalf("%s: sign-in %d %q, want 303 to /app", a.name, status, got)
		}
		if got := amrOf(c); !slices.Equal(got, []any{a.provider}) {
			t.Errorf("%s sign-in: amr %v, want [%s]", a.name, got, a.provider)
		}
	}
}
