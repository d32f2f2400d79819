package cache_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
	"github.com/gatehouse-auth/gatehouse/storage/cache"
	"github.com/gatehouse-auth/gatehouse/storage/storagetest"
)

func newBolt(t *testing.T) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(filepath.Join(t.TempDir(), "g.db"), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// The users the tests' sessions belong to: a store makes a session
	// only for a user that exists (CR1).
	for _, id := range []string{"user-1", "user-2"} {
		if err := s.CreateUser(t.Context(), storage.User{ID: id, Email: id + "@example.com"}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// fixture is a cache over a bbolt store with one stored session.
type fixture struct {
	inner *bolt.Store
	c     *cache.Store
	clock *webtest.Clock
	sess  storage.Session
}

func newFixture(t *testing.T, opts cache.Options) *fixture {
	t.Helper()
	f := &fixture{inner: newBolt(t), clock: webtest.NewClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))}
	opts.Now = f.clock.Now
	f.c = cache.New(f.inner, opts)
	f.sess = session("a", "user-1", f.clock.Now())
	if err := f.inner.CreateSession(t.Context(), f.sess); err != nil {
		t.Fatal(err)
	}
	return f
}

func session(name, userID string, now time.Time) storage.Session {
	return storage.Session{IDHash: storage.HashSecret(name), UserID: userID, Email: name + "@example.com",
		CreatedAt: now, ExpiresAt: now.Add(time.Hour), LastSeen: now}
}

// served reports whether the cache answers the session (from memory or the store).
func (f *fixture) served(t *testing.T, h storage.Hash) bool {
	t.Helper()
	_, err := f.c.Session(t.Context(), h)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// deleteBehindItsBack deletes the session in the wrapped store only, as
// another replica would, without telling the cache.
func (f *fixture) deleteBehindItsBack(t *testing.T) {
	t.Helper()
	if err := f.inner.DeleteSession(t.Context(), f.sess.IDHash); err != nil {
		t.Fatal(err)
	}
}

func TestConformance(t *testing.T) {
	// The decorator is a storage.Store: the whole suite, with the cache live
	// (serving from memory; not live, it only passes through).
	storagetest.Run(t, func(t *testing.T) storage.Store {
		s, err := bolt.Open(filepath.Join(t.TempDir(), "g.db"), bolt.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		c := cache.New(s, cache.Options{HeartbeatTimeout: time.Hour})
		c.Resync()
		c.Heartbeat(time.Now())
		return c
	})
}

func TestServesFromMemoryOnlyWhileLive(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(f *fixture)
		cached bool // a session deleted behind the cache's back is still served
	}{
		{"never resynced", func(f *fixture) { f.c.Heartbeat(f.clock.Now()) }, false},
		{"resynced, no heartbeat yet", func(f *fixture) { f.c.Resync() }, false},
		{"live", func(f *fixture) { f.c.Resync(); f.c.Heartbeat(f.clock.Now()) }, true},
		{"heartbeat just in time", func(f *fixture) { f.c.Resync(); f.c.Heartbeat(f.clock.Now()); f.clock.Advance(time.Second) }, true},
		{"heartbeat late", func(f *fixture) { f.c.Resync(); f.c.Heartbeat(f.clock.Now()); f.clock.Advance(time.Second + 1) }, false},
		{"connection down", func(f *fixture) { f.c.Resync(); f.c.Heartbeat(f.clock.Now()); f.c.Down() }, false},
		{"down, then resynced", func(f *fixture) { f.c.Resync(); f.c.Heartbeat(f.clock.Now()); f.c.Down(); f.c.Resync() }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, cache.Options{HeartbeatTimeout: time.Second})
			// Fill while live, then bring the cache to the state under test.
			f.c.Resync()
			f.c.Heartbeat(f.clock.Now())
			if !f.served(t, f.sess.IDHash) {
				t.Fatal("stored session not served")
			}
			f.c.Down()
			tc.setup(f)
			if !f.served(t, f.sess.IDHash) && tc.cached {
				t.Fatal("session missing before the delete")
			}
			f.deleteBehindItsBack(t)
			if got := f.served(t, f.sess.IDHash); got != tc.cached {
				t.Fatalf("session deleted behind the cache: served %v, want %v (live %v)", got, tc.cached, f.c.Live())
			}
		})
	}
}

func TestInvalidation(t *testing.T) {
	for _, tc := range []struct {
		name       string
		invalidate func(f *fixture)
	}{
		{"session", func(f *fixture) { f.c.InvalidateSession(f.sess.IDHash) }},
		{"user", func(f *fixture) { f.c.InvalidateUser(f.sess.UserID) }},
		{"resync", func(f *fixture) { f.c.Resync() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, cache.Options{HeartbeatTimeout: time.Hour})
			f.c.Resync()
			f.c.Heartbeat(f.clock.Now())
			other := session("other", "user-2", f.clock.Now())
			if err := f.inner.CreateSession(t.Context(), other); err != nil {
				t.Fatal(err)
			}
			f.served(t, f.sess.IDHash)
			f.served(t, other.IDHash)
			f.deleteBehindItsBack(t)
			tc.invalidate(f)
			if f.served(t, f.sess.IDHash) {
				t.Fatal("invalidated session still served")
			}
			if !f.served(t, other.IDHash) {
				t.Fatal("the other user's session is gone")
			}
		})
	}
}

// Revocations made through the decorator hold on the next request, even
// before any notification comes back.
func TestLocalRevocationImmediate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		revoke func(t *testing.T, f *fixture)
	}{
		{"DeleteSession", func(t *testing.T, f *fixture) {
			if err := f.c.DeleteSession(t.Context(), f.sess.IDHash); err != nil {
				t.Fatal(err)
			}
		}},
		{"DeleteUserSessions", func(t *testing.T, f *fixture) {
			if _, err := f.c.DeleteUserSessions(t.Context(), f.sess.UserID); err != nil {
				t.Fatal(err)
			}
		}},
		{"CompleteReset", func(t *testing.T, f *fixture) {
			now := f.clock.Now()
			u := storage.User{ID: f.sess.UserID}
			tok := storage.ResetToken{Hash: storage.HashSecret("token"), UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
			if err := f.inner.IssueResetToken(t.Context(), tok); err != nil {
				t.Fatal(err)
			}
			if _, _, err := f.c.CompleteReset(t.Context(), tok.Hash, now, "$argon2id$new", storage.Mail{}); err != nil {
				t.Fatal(err)
			}
		}},
		{"SetPasswordHash", func(t *testing.T, f *fixture) {
			if _, err := f.c.SetPasswordHash(t.Context(), f.sess.UserID, "$argon2id$new"); err != nil {
				t.Fatal(err)
			}
		}},
		{"ChangePassword", func(t *testing.T, f *fixture) {
			u, err := f.c.UserByID(t.Context(), f.sess.UserID)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := f.c.ChangePassword(t.Context(), u.ID, u.Epoch, "$argon2id$new"); err != nil {
				t.Fatal(err)
			}
		}},
		{"DeleteOtherSessions", func(t *testing.T, f *fixture) {
			kept := session("kept", f.sess.UserID, f.clock.Now())
			if err := f.inner.CreateSession(t.Context(), kept); err != nil {
				t.Fatal(err)
			}
			if _, err := f.c.DeleteOtherSessions(t.Context(), f.sess.UserID, kept.IDHash); err != nil {
				t.Fatal(err)
			}
		}},
		{"SetUserDisabled", func(t *testing.T, f *fixture) {
			if _, err := f.c.SetUserDisabled(t.Context(), f.sess.UserID, true); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, cache.Options{HeartbeatTimeout: time.Hour})
			f.c.Resync()
			f.c.Heartbeat(f.clock.Now())
			f.served(t, f.sess.IDHash)
			tc.revoke(t, f)
			if f.served(t, f.sess.IDHash) {
				t.Fatal("revoked session served from the cache")
			}
		})
	}
}

// racingStore invalidates the cache in the middle of a Session read, as a
// notification arriving while the read is in flight.
type racingStore struct {
	*bolt.Store
	during func()
}

func (r *racingStore) Session(ctx context.Context, h storage.Hash) (storage.Session, error) {
	s, err := r.Store.Session(ctx, h)
	if r.during != nil {
		r.during()
	}
	return s, err
}

func TestReadRacingInvalidationNotKept(t *testing.T) {
	inner := &racingStore{Store: newBolt(t)}
	c := cache.New(inner, cache.Options{HeartbeatTimeout: time.Hour})
	c.Resync()
	c.Heartbeat(time.Now())
	sess := session("a", "user-1", time.Now())
	if err := inner.CreateSession(t.Context(), sess); err != nil {
		t.Fatal(err)
	}
	// The read sees the session; the revocation commits and its
	// notification is handled before the read returns.
	inner.during = func() {
		_ = inner.Store.DeleteSession(context.Background(), sess.IDHash)
		c.InvalidateSession(sess.IDHash)
	}
	if _, err := c.Session(t.Context(), sess.IDHash); err != nil {
		t.Fatal(err)
	}
	inner.during = nil
	if _, err := c.Session(t.Context(), sess.IDHash); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("session read before its revocation was kept: %v", err)
	}
}

func TestBounded(t *testing.T) {
	f := newFixture(t, cache.Options{MaxEntries: 3, HeartbeatTimeout: time.Hour})
	f.c.Resync()
	f.c.Heartbeat(f.clock.Now())
	for i := range 10 {
		s := session(string(rune('b'+i)), "user-1", f.clock.Now())
		if err := f.inner.CreateSession(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		f.served(t, s.IDHash)
	}
	if n := f.c.Stats().Entries; n != 3 {
		t.Fatalf("entries %d, want the bound 3", n)
	}
}

func TestEntriesAgeOut(t *testing.T) {
	f := newFixture(t, cache.Options{MaxAge: time.Minute, HeartbeatTimeout: time.Hour})
	f.c.Resync()
	f.c.Heartbeat(f.clock.Now())
	f.served(t, f.sess.IDHash)
	f.deleteBehindItsBack(t)
	f.clock.Advance(time.Minute)
	f.c.Heartbeat(f.clock.Now())
	if f.served(t, f.sess.IDHash) {
		t.Fatal("an entry older than MaxAge was served")
	}
}
