package authflows

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// DV1 for every way of signing in: a browser that accepted an invitation
// (which signs it in) keeps signing in with its password while guesses from
// elsewhere lock the account.
func TestDeviceCookieFromInvite(t *testing.T) {
	e := newTestEnv(t)
	u := e.CreateUser(t, "ivy@example.com", "")
	token := "invite-token-for-ivy"
	if err := e.Store.IssueInviteToken(t.Context(), storage.ResetToken{Hash: storage.HashSecret(token), UserID: u.ID,
		CreatedAt: e.Clock.Now(), ExpiresAt: e.Clock.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	const password = "a fine long passphrase"
	resp := e.PostJSON("/auth/invite", map[string]string{"token": token, "password": password})
	device := deviceCookieOf(resp)
	if resp.StatusCode != http.StatusOK || device == nil {
		t.Fatalf("invite: %d, device cookie %v", resp.StatusCode, device)
	}
	lockOut(t, e, "ivy@example.com")
	if resp := loginWith(e, "ivy@example.com", password); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("new browser on a locked account: status %d", resp.StatusCode)
	}
	if resp := loginWith(e, "ivy@example.com", password, device); resp.StatusCode != http.StatusOK {
		t.Errorf("the invited browser on a locked account: status %d", resp.StatusCode)
	}
}

// DV1: an OAuth sign-in gives the browser a device cookie for the account
// it signed in to, valid for that account only.
func TestDeviceCookieFromOAuthSignIn(t *testing.T) {
	for _, provider := range bothProviders {
		t.Run(provider, func(t *testing.T) {
			e := newOAuthEnv(t, oauthEnvOptions{})
			u := e.newUser("bob@example.com", true)
			owner := e.newBrowser()
			owner.signIn(u)
			e.setNext(provider, oauthtest.Account{Subject: "77", Email: "bob@example.com", EmailVerified: true})
			if a := owner.flow("/auth/link/" + provider); a.status != http.StatusSeeOther {
				t.Fatalf("link: %d %s", a.status, a.body)
			}
			a := e.newBrowser().flow("/auth/login/" + provider)
			device, ok := a.cookie(deviceCookieName)
			if a.status != http.StatusSeeOther || !ok {
				t.Fatalf("login: %d, device cookie %v", a.status, ok)
			}
			r := httptest.NewRequest(http.MethodPost, "/auth/login", nil)
			r.AddCookie(&http.Cookie{Name: device.Name, Value: device.Value})
			if e.Handler.deviceNonce(r, "bob@example.com") == "" {
				t.Error("the OAuth sign-in's device cookie is not valid for bob's account")
			}
			if e.Handler.deviceNonce(r, "someone.else@example.com") != "" {
				t.Error("the device cookie is valid for another account")
			}
		})
	}
}
