package authflows

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// expectInvalidState checks that a callback was refused as invalid_state and
// signed nobody in.
func expectInvalidState(t *testing.T, what string, a oauthAnswer) {
	t.Helper()
	if a.status != http.StatusBadRequest || a.problemCode() != "invalid_state" {
		t.Errorf("%s: %d %s, want 400 invalid_state", what, a.status, a.body)
	}
	if _, ok := a.cookie(oauthCookieName); ok {
		t.Errorf("%s: session cookie set", what)
	}
}

// OA1: a state works once; a replayed callback is refused.
func TestOAuthStateSingleUse(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	e.github.SetNext(oauthtest.Account{Subject: "1", Email: "once@example.com", EmailVerified: true})
	b := e.newBrowser()
	callback := b.authorize("/auth/login/github")
	if a := b.get(callback); a.status != http.StatusSeeOther {
		t.Fatalf("first callback: %d %s", a.status, a.body)
	}
	// The browser keeps no transaction cookie now; a replay from a browser
	// that still had it is refused too, because the flow is gone.
	expectInvalidState(t, "replay", b.get(callback))
	if n := len(e.github.TokenRequests()); n != 1 {
		t.Errorf("%d token requests, want the code redeemed once", n)
	}
	if !e.hasEvent("oauth_state_failed") {
		t.Errorf("no oauth_state_failed event in %s", e.Logs)
	}
}

// OA1: a flow expires after 10 minutes.
func TestOAuthStateExpires(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	e.google.SetNext(oauthtest.Account{Subject: "1", Email: "late@example.com", EmailVerified: true})
	b := e.newBrowser()
	callback := b.authorize("/auth/login/google")
	e.Clock.Advance(10*time.Minute + time.Second)
	expectInvalidState(t, "expired", b.get(callback))
	if n := len(e.google.TokenRequests()); n != 0 {
		t.Errorf("an expired flow redeemed its code")
	}
	// Swept from the store by the background sweep.
	b.authorize("/auth/login/google")
	e.Clock.Advance(11 * time.Minute)
	if n, err := e.Store.DeleteExpiredOAuthFlows(t.Context(), e.Clock.Now()); err != nil || n != 1 {
		t.Errorf("DeleteExpiredOAuthFlows = %d, %v; want 1", n, err)
	}
}

// OA1: unknown and missing states are refused before any provider call.
func TestOAuthStateMissingOrUnknown(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	b := e.newBrowser()
	expectInvalidState(t, "no state", b.get("/auth/callback/google?code=abc"))
	expectInvalidState(t, "unknown state", b.get("/auth/callback/google?code=abc&state="+newSecret()))
	if n := len(e.google.TokenRequests()); n != 0 {
		t.Errorf("%d token requests for invalid states", n)
	}
}

// OA1: the flow is bound to the browser that started it. Another browser
// with the callback URL (a login CSRF: the attacker's code in the victim's
// oauthBrowser) is refused, and the flow is spent.
func TestOAuthStateBoundToBrowser(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	e.google.SetNext(oauthtest.Account{Subject: "attacker", Email: "mallory@example.com", EmailVerified: true})
	attacker := e.newBrowser()
	callback := attacker.authorize("/auth/login/google")
	victim := e.newBrowser()
	expectInvalidState(t, "other browser", victim.get(callback))
	if users, _ := e.Store.ListUsers(t.Context()); len(users) != 0 {
		t.Errorf("users created: %+v", users)
	}
	if n := len(e.google.TokenRequests()); n != 0 {
		t.Errorf("code redeemed for another browser")
	}
}

// OA4: a state minted for one provider fails on the other's callback, and
// is spent there.
func TestOAuthStateOtherProvider(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	e.google.SetNext(oauthtest.Account{Subject: "1", Email: "mix@example.com", EmailVerified: true})
	b := e.newBrowser()
	callback := b.authorize("/auth/login/google")
	mixed := strings.Replace(callback, "/auth/callback/google", "/auth/callback/github", 1)
	// The transaction cookie is sent to every /auth/callback/ path.
	expectInvalidState(t, "google state on github", b.get(mixed))
	if n := len(e.github.TokenRequests()) + len(e.google.TokenRequests()); n != 0 {
		t.Errorf("%d token requests after a mix-up", n)
	}
	expectInvalidState(t, "the spent state on its own provider", b.get(callback))
}

// OA7: the link-CSRF attack. The attacker starts a link with his own session
// and his provider account, stops before the callback, and gets the victim's
// browser to open the callback URL. Nothing is linked to anyone.
func TestOAuthLinkCSRF(t *testing.T) {
	for _, provider := range bothProviders {
		t.Run(provider, func(t *testing.T) {
			e := newOAuthEnv(t, oauthEnvOptions{})
			attackerUser := e.newUser("mallory@example.com", true)
			victimUser := e.newUser("victim@example.com", true)
			attacker := e.newBrowser()
			attacker.signIn(attackerUser)
			victim := e.newBrowser()
			victimSession := victim.signIn(victimUser)

			e.setNext(provider, oauthtest.Account{Subject: "666", Email: "mallory@example.com", EmailVerified: true})
			callback := attacker.authorize("/auth/link/" + provider)
			expectInvalidState(t, "victim opens the attacker's callback", victim.get(callback))
			if ids := e.identities(victimUser.ID); len(ids) != 0 {
				t.Errorf("linked to the victim: %+v", ids)
			}
			if ids := e.identities(attackerUser.ID); len(ids) != 0 {
				t.Errorf("linked to the attacker: %+v", ids)
			}
			if victim.sessionID() != victimSession {
				t.Error("victim's session changed")
			}
			if _, err := e.Store.UserByIdentity(t.Context(), provider, "666"); err == nil {
				t.Error("the identity was linked to someone")
			}
		})
	}
}

// OA7, same browser: a link completes only for the session that started
// it. Signing in as someone else (or out) before the callback spoils it.
func TestOAuthLinkBoundToSession(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	first := e.newUser("first@example.com", true)
	second := e.newUser("second@example.com", true)
	b := e.newBrowser()
	b.signIn(first)
	e.github.SetNext(oauthtest.Account{Subject: "9", Email: "x@example.com", EmailVerified: true})

	callback := b.authorize("/auth/link/github")
	b.signIn(second)
	expectInvalidState(t, "other session", b.get(callback))

	callback = b.authorize("/auth/link/github")
	if err := e.Store.DeleteSession(t.Context(), storage.HashSecret(b.sessionID())); err != nil {
		t.Fatal(err)
	}
	expectInvalidState(t, "signed out", b.get(callback))

	if len(e.identities(first.ID))+len(e.identities(second.ID)) != 0 {
		t.Error("something was linked")
	}
	if n := len(e.github.TokenRequests()); n != 0 {
		t.Errorf("%d codes redeemed for spoiled links", n)
	}
}
