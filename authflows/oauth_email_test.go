package authflows

import (
	"net/http"
	"testing"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
)

// EM1 end to end, both providers: a verified email with a comma or a CR
// LF is not stored on a linked identity and does not make an account.
func TestProviderEmailRefusedInFlows(t *testing.T) {
	for _, provider := range bothProviders {
		t.Run(provider, func(t *testing.T) {
			e := newOAuthEnv(t, oauthEnvOptions{})
			u := e.newUser("alice@example.com", true)
			b := e.newBrowser()
			b.signIn(u)
			bad := "alice@example.com,admin@example.com"
			e.setNext(provider, oauthtest.Account{Subject: "5150", Email: bad, EmailVerified: true})
			if a := b.flow("/auth/link/" + provider); a.status != http.StatusSeeOther {
				t.Fatalf("link: %d %s", a.status, a.body)
			}
			for _, id := range e.identities(u.ID) {
				if id.Email != "" {
					t.Errorf("linked identity keeps the provider's email %q", id.Email)
				}
			}

			before, err := e.Store.ListUsers(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			e.setNext(provider, oauthtest.Account{Subject: "6160", Email: "new@example.com\r\nX-Forwarded-User: admin", EmailVerified: true})
			a := e.newBrowser().flow("/auth/login/" + provider)
			if a.status != http.StatusForbidden {
				t.Fatalf("login with a CR LF email: %d %s, want 403", a.status, a.body)
			}
			after, err := e.Store.ListUsers(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(after) != len(before) {
				t.Errorf("an account was made for a CR LF email: %d users, was %d", len(after), len(before))
			}
		})
	}
}
