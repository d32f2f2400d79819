package authflows

import (
	"net/http"
	"testing"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
)

// ID1: Google's ID token is verified by signature against the key set
// published at its JWKS URL. A tampered payload, a key that is not
// published (under the published kid), a kid never published, and an
// unsigned "alg: none" token are all refused with 400 invalid_id_token,
// and nobody is signed in or created.
func TestOAuthGoogleSignatureChecks(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	e.google.SetNext(oauthtest.Account{Subject: "g-sig", Email: "sig@example.com", EmailVerified: true})
	for _, f := range []oauthtest.Forgery{oauthtest.TamperedPayload, oauthtest.ForeignKey, oauthtest.UnknownKid, oauthtest.AlgNone} {
		t.Run(string(f), func(t *testing.T) {
			e.google.ForgeNextIDToken(f)
			b := e.newBrowser()
			a := b.flow("/auth/login/google")
			if a.status != http.StatusBadRequest || a.problemCode() != "invalid_id_token" {
				t.Errorf("%d %s, want 400 invalid_id_token", a.status, a.body)
			}
			if _, ok := b.me(); ok {
				t.Error("signed in")
			}
		})
	}
	if users, _ := e.Store.ListUsers(t.Context()); len(users) != 0 {
		t.Errorf("users created: %+v", users)
	}
	// The same account with an honest token signs in.
	if a := e.newBrowser().flow("/auth/login/google"); a.status != http.StatusSeeOther {
		t.Errorf("honest token: %d %s", a.status, a.body)
	}
}

// ID1: the key set is fetched once and cached; when Google rotates its key,
// a token with the new kid makes Gatehouse fetch the set again, and sign-in
// goes on working.
func TestOAuthGoogleKeyRotation(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	e.google.SetNext(oauthtest.Account{Subject: "g-rot", Email: "rot@example.com", EmailVerified: true})
	for range 2 {
		if a := e.newBrowser().flow("/auth/login/google"); a.status != http.StatusSeeOther {
			t.Fatalf("before rotation: %d %s", a.status, a.body)
		}
	}
	if n := e.google.JWKSRequests(); n != 1 {
		t.Errorf("key set fetched %d times for two sign-ins, want once (cached)", n)
	}
	e.google.RotateKey()
	if a := e.newBrowser().flow("/auth/login/google"); a.status != http.StatusSeeOther {
		t.Fatalf("after rotation: %d %s", a.status, a.body)
	}
	if n := e.google.JWKSRequests(); n != 2 {
		t.Errorf("key set fetched %d times, want 2 (refetched for the new kid)", n)
	}
	// A token signed by the retired key's kid is now unknown: refused.
	e.google.ForgeNextIDToken(oauthtest.UnknownKid)
	if a := e.newBrowser().flow("/auth/login/google"); a.status != http.StatusBadRequest {
		t.Errorf("unknown kid after rotation: %d %s", a.status, a.body)
	}
}
