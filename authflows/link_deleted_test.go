package authflows

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// OA7 (storage.Store.LinkIdentity: "only while that session exists,
// belongs to id.UserID and its user is enabled ...: otherwise
// ErrCredentialsChanged"; the conformance suite keeps ErrNotFound for an
// unknown user). When `users delete` lands while the link callback is at
// the provider, the session is gone with its user and the stores answer
// storage.ErrNotFound (the user lookup comes before the session check): the
// browser gets the 409 credentials_changed (and expired cookie) of every
// other way the session can end meanwhile, not a 503 store_unavailable and
// an ERROR "store unavailable" as if the database were down.
func TestLinkCallbackRacingUserDeletionIsNoStoreOutage(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{providers: []string{"github"}, wrapStore: func(s storage.Store) storage.Store {
		return revokedBeforeLink{Store: s, revoke: func(ctx context.Context, s storage.Store, userID string) error {
			return s.DeleteUser(ctx, userID)
		}}
	}})
	victim := e.newUser("victim@example.com", true)
	b := e.newBrowser()
	b.signIn(victim)
	e.github.SetNext(oauthtest.Account{Subject: "666", Email: "someone@example.com", EmailVerified: true})
	a := b.flow("/auth/link/github")
	if a.status == http.StatusServiceUnavailable || a.status == http.StatusInternalServerError {
		t.Errorf("link callback whose user was deleted meanwhile: %d %s, want 409 credentials_changed (the session ended), not a store outage",
			a.status, strings.TrimSpace(a.body))
	}
}
