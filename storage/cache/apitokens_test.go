package cache_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
	"github.com/gatehouse-auth/gatehouse/storage/cache"
	"github.com/gatehouse-auth/gatehouse/storage/storagetest"
)

// countingStore counts the token lookups that reach the wrapped store.
type countingStore struct {
	*bolt.Store
	lookups atomic.Int64
}

func (c *countingStore) APITokenByHash(ctx context.Context, h storage.Hash) (storage.APIToken, storage.APITokenOwner, error) {
	c.lookups.Add(1)
	return c.Store.APITokenByHash(ctx, h)
}

// tokenFixture is a live cache over a bbolt store holding one token of
// user-1 and one service token.
type tokenFixture struct {
	*fixture
	counted   *countingStore
	mine, svc storage.APIToken
}

func newTokenFixture(t *testing.T, opts cache.Options) *tokenFixture {
	t.Helper()
	f := newFixture(t, opts)
	tf := &tokenFixture{fixture: f, counted: &countingStore{Store: f.inner}}
	opts.Now = f.clock.Now
	f.c = cache.New(tf.counted, opts)
	now := f.clock.Now()
	tf.mine = storage.APIToken{ID: "mine", Hash: storage.HashSecret("ghp_mine"), Name: "script", UserID: "user-1", CreatedAt: now}
	tf.svc = storage.APIToken{ID: "svc", Hash: storage.HashSecret("ghp_svc"), Name: "ci", Service: "ci", Groups: []string{"oidc:ops"}, CreatedAt: now}
	for _, tok := range []storage.APIToken{tf.mine, tf.svc} {
		if err := f.inner.CreateAPIToken(t.Context(), tok); err != nil {
			t.Fatal(err)
		}
	}
	f.c.Resync()
	f.c.Heartbeat(f.clock.Now())
	return tf
}

// tokenServed reports whether the cache answers the token and with which owner state.
func (f *tokenFixture) tokenServed(t *testing.T, h storage.Hash) (bool, storage.APITokenOwner) {
	t.Helper()
	_, owner, err := f.c.APITokenByHash(t.Context(), h)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil, owner
}

// A known token is answered from memory in steady state: one store read,
// then none; an unknown one is read every time and never kept.
func TestAPITokenSteadyStateReadsNothing(t *testing.T) {
	f := newTokenFixture(t, cache.Options{HeartbeatTimeout: time.Hour})
	for range 5 {
		if ok, owner := f.tokenServed(t, f.mine.Hash); !ok || owner.Email != "user-1@example.com" {
			t.Fatalf("token of user-1: served %v, owner %+v", ok, owner)
		}
	}
	if n := f.counted.lookups.Load(); n != 1 {
		t.Fatalf("5 lookups of a known token read the store %d times, want 1", n)
	}
	for range 3 {
		if ok, _ := f.tokenServed(t, storage.HashSecret("ghp_unknown")); ok {
			t.Fatal("unknown token served")
		}
	}
	if n := f.counted.lookups.Load(); n != 4 {
		t.Fatalf("3 lookups of an unknown token read the store %d times in all, want 1+3", n)
	}
	if st := f.c.Stats(); st.TokenEntries != 1 || st.TokenHits != 4 {
		t.Fatalf("stats %+v, want 1 token entry and 4 hits", st)
	}
}

// A token revoked in the store behind the cache's back (by another
// replica) is served from memory only while the cache is live, until a
// notification drops it.
func TestAPITokenInvalidation(t *testing.T) {
	for _, tc := range []struct {
		name       string
		invalidate func(f *tokenFixture)
		served     bool
	}{
		{"no notification yet", func(f *tokenFixture) {}, true},
		{"token", func(f *tokenFixture) { f.c.InvalidateAPIToken(f.mine.Hash) }, false},
		{"owner", func(f *tokenFixture) { f.c.InvalidateUser("user-1") }, false},
		{"another user", func(f *tokenFixture) { f.c.InvalidateUser("user-2") }, true},
		{"resync", func(f *tokenFixture) { f.c.Resync(); f.c.Heartbeat(f.clock.Now()) }, false},
		{"down", func(f *tokenFixture) { f.c.Down() }, false},
		{"heartbeat late", func(f *tokenFixture) { f.clock.Advance(2 * time.Hour) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTokenFixture(t, cache.Options{HeartbeatTimeout: time.Hour, MaxAge: 3 * time.Hour})
			f.tokenServed(t, f.mine.Hash)
			f.tokenServed(t, f.svc.Hash)
			if _, err := f.inner.RevokeAPIToken(t.Context(), f.mine.ID); err != nil {
				t.Fatal(err)
			}
			tc.invalidate(f)
			if got, _ := f.tokenServed(t, f.mine.Hash); got != tc.served {
				t.Fatalf("token revoked behind the cache: served %v, want %v", got, tc.served)
			}
			if tc.name != "down" && tc.name != "heartbeat late" {
				if ok, _ := f.tokenServed(t, f.svc.Hash); !ok {
					t.Fatal("the service token is gone")
				}
			}
		})
	}
}

// Changes made through the decorator hold on the next request, before any
// notification comes back: a revoked token is refused, a disabled owner is
// reported disabled, a deleted owner's token is gone.
func TestAPITokenLocalChangesImmediate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		change    func(t *testing.T, f *tokenFixture) error
		served    bool
		ownerGone bool
	}{
		{"revoke", func(t *testing.T, f *tokenFixture) error {
			_, err := f.c.RevokeAPIToken(t.Context(), f.mine.ID)
			return err
		}, false, false},
		{"disable", func(t *testing.T, f *tokenFixture) error {
			_, err := f.c.SetUserDisabled(t.Context(), "user-1", true)
			return err
		}, true, true},
		{"delete", func(t *testing.T, f *tokenFixture) error {
			return f.c.DeleteUser(t.Context(), "user-1")
		}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTokenFixture(t, cache.Options{HeartbeatTimeout: time.Hour})
			if ok, owner := f.tokenServed(t, f.mine.Hash); !ok || owner.Disabled {
				t.Fatalf("before: served %v, owner %+v", ok, owner)
			}
			if err := tc.change(t, f); err != nil {
				t.Fatal(err)
			}
			ok, owner := f.tokenServed(t, f.mine.Hash)
			if ok != tc.served || owner.Disabled != tc.ownerGone {
				t.Fatalf("after %s: served %v, owner %+v", tc.name, ok, owner)
			}
		})
	}
}

func TestAPITokensBounded(t *testing.T) {
	f := newTokenFixture(t, cache.Options{MaxEntries: 3, HeartbeatTimeout: time.Hour})
	for i := range 10 {
		tok := storage.APIToken{ID: string(rune('a' + i)), Hash: storage.HashSecret(string(rune('a' + i))), Service: "s", CreatedAt: f.clock.Now()}
		if err := f.inner.CreateAPIToken(t.Context(), tok); err != nil {
			t.Fatal(err)
		}
		f.tokenServed(t, tok.Hash)
	}
	if n := f.c.Stats().TokenEntries; n != 3 {
		t.Fatalf("token entries %d, want the bound 3", n)
	}
}

func TestConformanceReopen(t *testing.T) {
	storagetest.RunReopen(t, func(t *testing.T) (storage.Store, func(t *testing.T) storage.Store) {
		path := filepath.Join(t.TempDir(), "g.db")
		open := func(t *testing.T) storage.Store {
			s, err := bolt.Open(path, bolt.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			c := cache.New(s, cache.Options{HeartbeatTimeout: time.Hour})
			c.Resync()
			c.Heartbeat(time.Now())
			return c
		}
		return open(t), open
	})
}
