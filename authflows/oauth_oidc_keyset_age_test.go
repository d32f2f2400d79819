package authflows

import (
	"net/http"
	"testing"
	"time"

	"github.com/oauth2-proxy/mockoidc"
)

// ID1: "a key the provider does not publish" is refused, and the key set is
// "fetched, cached, fetched again for an unknown kid". go-oidc's
// RemoteKeySet alone never ages its cache: it tries its cached key first
// and fetches again only for a kid it does not hold, so a withdrawn key
// (rotated out after a leak) would verify ID tokens for as long as the
// process runs. Here the IdP stops publishing its first key and, a day
// later, a token signed with that withdrawn key must be refused.
func TestOIDCWithdrawnKeyRefused(t *testing.T) {
	e, idp := newOIDCEnv(t, "groups")
	user := &mockoidc.MockUser{Subject: "w-1", Email: "w@example.com", EmailVerified: true}
	idp.QueueUser(user)
	if a := e.newBrowser().flow("/auth/login/oidc"); a.status != http.StatusSeeOther {
		t.Fatalf("first sign-in: %d %s", a.status, a.body)
	}
	// The IdP withdraws its key: only a new one is published from now on.
	// The withdrawn key still signs (a leaked key in an attacker's hands).
	next, err := mockoidc.RandomKeypair(2048)
	if err != nil {
		t.Fatal(err)
	}
	idp.mu.Lock()
	idp.published = next
	idp.mu.Unlock()
	hits := idp.jwksHits.Load()

	const later = 24 * time.Hour
	e.Clock.Advance(later)
	idp.FastForward(later)
	idp.QueueUser(user)
	b := e.newBrowser()
	a := b.flow("/auth/login/oidc")
	if a.status != http.StatusBadRequest || a.problemCode() != "invalid_id_token" {
		t.Errorf("a day after the IdP withdrew the key, a token signed with it: %d %s, want 400 invalid_id_token (key set fetched %d more times)",
			a.status, a.body, idp.jwksHits.Load()-hits)
	}
}
