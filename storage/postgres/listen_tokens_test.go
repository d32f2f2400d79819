package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// servesToken reports whether the replica's cache answers the token, and
// whether it reports the owner disabled.
func (r *replica) servesToken(t *testing.T, h storage.Hash) (served, ownerDisabled bool) {
	t.Helper()
	_, owner, err := r.cache.APITokenByHash(t.Context(), h)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil, owner.Disabled
}

// TestAPITokenRevocationReachesOtherReplicas: an API token cached by B
// (answered from memory, no database read) and revoked through A, or whose
// owner A disables or deletes, is refused by B within a second; an owner
// enabled again through A is seen enabled by B within a second.
func TestAPITokenRevocationReachesOtherReplicas(t *testing.T) {
	url := pg.NewDatabase(t)
	a, b := newReplica(t, url), newReplica(t, url)
	if !eventually(5*time.Second, func() bool { return a.cache.Live() && b.cache.Live() }) {
		t.Fatal("caches never became live")
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	n := 0
	newToken := func(userID string) storage.APIToken {
		n++
		tok := storage.APIToken{ID: string(rune('a' + n)), Hash: storage.HashSecret(string(rune('a' + n))), Name: "script",
			UserID: userID, CreatedAt: now}
		if userID == "" {
			tok.Service, tok.Groups = "ci", []string{"oidc:ops"}
		}
		if err := a.cache.CreateAPIToken(t.Context(), tok); err != nil {
			t.Fatal(err)
		}
		return tok
	}
	cachedByB := func(tok storage.APIToken) {
		t.Helper()
		if ok, _ := b.servesToken(t, tok.Hash); !ok {
			t.Fatal("B does not serve the new token")
		}
		hits := b.cache.Stats().TokenHits
		b.servesToken(t, tok.Hash)
		if b.cache.Stats().TokenHits == hits {
			t.Fatal("B read the store for a cached token: the cache is not used")
		}
	}
	for _, tc := range []struct {
		name     string
		user     bool
		change   func(u storage.User, tok storage.APIToken) error
		disabled bool // B then serves the token with its owner disabled
	}{
		{"revoke service token", false, func(_ storage.User, tok storage.APIToken) error {
			_, err := a.cache.RevokeAPIToken(t.Context(), tok.ID)
			return err
		}, false},
		{"revoke user token", true, func(_ storage.User, tok storage.APIToken) error {
			_, err := a.cache.RevokeAPIToken(t.Context(), tok.ID)
			return err
		}, false},
		{"disable owner", true, func(u storage.User, _ storage.APIToken) error {
			_, err := a.cache.SetUserDisabled(t.Context(), u.ID, true)
			return err
		}, true},
		{"delete owner", true, func(u storage.User, _ storage.APIToken) error {
			return a.cache.DeleteUser(t.Context(), u.ID)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := storage.User{ID: "u-" + tc.name, Email: string(rune('a'+n)) + "@example.com", CreatedAt: now}
			if err := a.store.CreateUser(t.Context(), u); err != nil {
				t.Fatal(err)
			}
			owner := ""
			if tc.user {
				owner = u.ID
			}
			tok := newToken(owner)
			cachedByB(tok)
			if err := tc.change(u, tok); err != nil {
				t.Fatal(err)
			}
			if served, disabled := a.servesToken(t, tok.Hash); served != tc.disabled || disabled != tc.disabled {
				t.Fatalf("A after %s: served %v, owner disabled %v", tc.name, served, disabled)
			}
			start := time.Now()
			if !eventually(time.Second, func() bool {
				served, disabled := b.servesToken(t, tok.Hash)
				return served == tc.disabled && disabled == tc.disabled
			}) {
				t.Fatalf("B still serves the token as before %s after 1s", tc.name)
			}
			t.Logf("seen by B after %v", time.Since(start))
		})
	}

	t.Run("enable owner", func(t *testing.T) {
		u := storage.User{ID: "u-enable", Email: "enable@example.com", CreatedAt: now}
		if err := a.store.CreateUser(t.Context(), u); err != nil {
			t.Fatal(err)
		}
		tok := newToken(u.ID)
		if _, err := a.cache.SetUserDisabled(t.Context(), u.ID, true); err != nil {
			t.Fatal(err)
		}
		if !eventually(time.Second, func() bool { served, disabled := b.servesToken(t, tok.Hash); return served && disabled }) {
			t.Fatal("B does not see the owner disabled")
		}
		if _, err := a.cache.SetUserDisabled(t.Context(), u.ID, false); err != nil {
			t.Fatal(err)
		}
		if !eventually(time.Second, func() bool { served, disabled := b.servesToken(t, tok.Hash); return served && !disabled }) {
			t.Fatal("B still sees the owner disabled 1s after A enabled it")
		}
	})
}
