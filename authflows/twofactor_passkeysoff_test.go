package authflows

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// MF1: a user whose only second factor is a passkey still gives it when
// passkeys are off here (an IP address as the base URL's host, say, after
// a change of --base-url): the password alone makes no session, even with
// no recovery code left; the user recovers through an administrator
// (gatehouse users reset-second-factor), never by skipping the factor.
func TestSecondFactorPasskeyOnlyUserWhilePasskeysAreOff(t *testing.T) {
	for _, policy := range []SecondFactorPolicy{SecondFactorOptional, SecondFactorRequired} {
		t.Run(string(policy), func(t *testing.T) {
			e := newTestEnv(t, func(c *Config) {
				c.BaseURL, _ = url.Parse("http://192.0.2.1:8080")
				c.SecondFactor = policy
			})
			u := e.CreateUser(t, "ann@example.com", testPassword)
			pk := storage.Passkey{ID: storage.NewFactorID(), UserID: u.ID, Name: "Laptop",
				CredentialID: []byte("credential-1"), PublicKey: []byte("key"), UserHandle: []byte(u.ID), CreatedAt: e.Clock.Now()}
			if _, err := e.Store.AddPasskey(t.Context(), pk, nil); err != nil {
				t.Fatalf("AddPasskey: %v", err)
			}
			resp := e.PostJSON("/auth/login", map[string]string{"email": "ann@example.com", "password": testPassword})
			if c := e.SessionCookie(resp); c != nil || resp.StatusCode == http.StatusOK && cookieOf(resp, stepCookieName) == nil {
				t.Fatalf("password alone of a user with a passkey, passkeys off: %d, session %v: %s", resp.StatusCode, c != nil, e.Body(t, resp))
			}
		})
	}
}
