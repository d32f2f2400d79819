package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/cache"
	"github.com/gatehouse-auth/gatehouse/storage/postgres"
)

// replica is one process's view: a store, its cache and its listener.
type replica struct {
	store *postgres.Store
	cache *cache.Store
}

func newReplica(t *testing.T, url string) *replica {
	t.Helper()
	s, err := postgres.Open(t.Context(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{store: s, cache: cache.New(s, cache.Options{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Listen(ctx, r.cache, postgres.ListenOptions{HeartbeatInterval: 50 * time.Millisecond})
	}()
	t.Cleanup(func() { cancel(); <-done; s.Close() })
	return r
}

// eventually polls cond every 5ms for up to d.
func eventually(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

func (r *replica) serves(t *testing.T, h storage.Hash) bool {
	t.Helper()
	_, err := r.cache.Session(t.Context(), h)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// TestRevocationReachesOtherReplicas: a session cached by B and revoked
// through A stops being served by B within a second, for each kind of
// revocation; while B's notification connection is cut, B serves nothing
// from memory.
func TestRevocationReachesOtherReplicas(t *testing.T) {
	url := pg.NewDatabase(t)
	a, b := newReplica(t, url), newReplica(t, url)
	if !eventually(5*time.Second, func() bool { return a.cache.Live() && b.cache.Live() }) {
		t.Fatal("caches never became live")
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	u := storage.User{ID: "u1", Email: "a@example.com", CreatedAt: now}
	if err := a.store.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	n := 0
	newSession := func() storage.Session {
		n++
		cur, err := a.store.UserByID(t.Context(), u.ID) // a session is made at the user's epoch
		if err != nil {
			t.Fatal(err)
		}
		s := storage.Session{IDHash: storage.HashSecret(string(rune('a' + n))), UserID: u.ID, Epoch: cur.Epoch, CreatedAt: now, ExpiresAt: now.Add(time.Hour), LastSeen: now}
		if err := a.cache.CreateSession(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		name   string
		revoke func(s storage.Session) error
	}{
		{"logout", func(s storage.Session) error { return a.cache.DeleteSession(t.Context(), s.IDHash) }},
		{"revoke-sessions", func(s storage.Session) error { _, err := a.cache.DeleteUserSessions(t.Context(), u.ID); return err }},
		{"disable", func(s storage.Session) error { _, err := a.cache.SetUserDisabled(t.Context(), u.ID, true); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := a.store.SetUserDisabled(t.Context(), u.ID, false); err != nil {
				t.Fatal(err)
			}
			s := newSession()
			first, second := b.serves(t, s.IDHash), b.serves(t, s.IDHash) // the second from the cache
			if !first || !second {
				t.Fatal("B does not serve the new session")
			}
			hitsBefore := b.cache.Stats().Hits
			b.serves(t, s.IDHash)
			if b.cache.Stats().Hits == hitsBefore {
				t.Fatal("B read the store for a cached session: the cache is not used")
			}
			if err := tc.revoke(s); err != nil {
				t.Fatal(err)
			}
			if a.serves(t, s.IDHash) {
				t.Fatal("A serves the session it revoked")
			}
			start := time.Now()
			if !eventually(time.Second, func() bool { return !b.serves(t, s.IDHash) }) {
				t.Fatal("B still serves the revoked session after 1s")
			}
			t.Logf("seen by B after %v", time.Since(start))
		})
	}

	t.Run("listener cut", func(t *testing.T) {
		if _, err := a.store.SetUserDisabled(t.Context(), u.ID, false); err != nil {
			t.Fatal(err)
		}
		s := newSession()
		b.serves(t, s.IDHash)
		conn := connect(t, url)
		// Terminate every listener backend (A's and B's) and wait for them to go.
		var cut int
		err := conn.QueryRow(t.Context(), `SELECT count(*) FROM (SELECT pg_terminate_backend(pid, 5000)
			FROM pg_stat_activity WHERE application_name LIKE $1) x`, postgres.ListenApplicationName+"-%").Scan(&cut)
		if err != nil || cut != 2 {
			t.Fatalf("terminated %d listener backends (%v), want 2", cut, err)
		}
		// Revoked directly in the database, so that no replica's local
		// invalidation helps: only the liveness rule protects B.
		if _, err := conn.Exec(t.Context(), "DELETE FROM sessions WHERE id_hash = $1", s.IDHash[:]); err != nil {
			t.Fatal(err)
		}
		if b.serves(t, s.IDHash) {
			t.Fatal("B served a session revoked while its notification connection was cut")
		}
		if !eventually(5*time.Second, b.cache.Live) {
			t.Fatal("B's cache did not come back after the cut")
		}
		s2 := newSession()
		b.serves(t, s2.IDHash)
		if _, err := a.cache.DeleteUserSessions(t.Context(), u.ID); err != nil {
			t.Fatal(err)
		}
		if !eventually(time.Second, func() bool { return !b.serves(t, s2.IDHash) }) {
			t.Fatal("after reconnecting, B does not hear revocations")
		}
	})
}
