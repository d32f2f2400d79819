package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/cache"
	"github.com/gatehouse-auth/gatehouse/storage/postgres"
)

// laggingInvalidator is a session cache whose listener falls behind: each
// notification takes delay to handle (a CPU-starved process, a burst of
// revocations from a busy cluster). Notifications queue up at the
// connection and reach the cache later and later.
type laggingInvalidator struct {
	*cache.Store
	delay time.Duration
}

func (l laggingInvalidator) InvalidateSession(h storage.Hash) {
	time.Sleep(l.delay)
	l.Store.InvalidateSession(h)
}

func (l laggingInvalidator) InvalidateUser(id string) {
	time.Sleep(l.delay)
	l.Store.InvalidateUser(id)
}

func (l laggingInvalidator) Heartbeat(sent time.Time) {
	time.Sleep(l.delay)
	l.Store.Heartbeat(sent)
}

// PG1: a replica serves from its cache only while "its own heartbeat came
// back within 1 s", and "a revoked session is refused on every replica
// within 1 s". Listen sent the same heartbeat payload every time and the
// cache stamped a heartbeat with the time it was read, not the time it was
// sent: a heartbeat sent seconds ago, read now, proves only that changes
// committed seconds ago were heard, yet kept the cache live. A listener
// that lagged behind its notifications therefore kept serving a session
// revoked by another replica for as long as the lag, not for at most 1 s
// (found by an outside attack). The heartbeat now carries its send time.
func TestLaggingListenerStopsServingFromCache(t *testing.T) {
	url := pg.NewDatabase(t)
	a := newReplica(t, url)

	bStore, err := postgres.Open(t.Context(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bCache := cache.New(bStore, cache.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		bStore.Listen(ctx, laggingInvalidator{bCache, 20 * time.Millisecond}, postgres.ListenOptions{HeartbeatInterval: 5 * time.Millisecond})
	}()
	t.Cleanup(func() { cancel(); <-done; bStore.Close() })
	if !eventually(5*time.Second, func() bool { return a.cache.Live() && bCache.Live() }) {
		t.Fatal("caches never became live")
	}

	now := time.Now().UTC().Truncate(time.Microsecond)
	u := storage.User{ID: "u1", Email: "a@example.com", CreatedAt: now}
	if err := a.store.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	s := storage.Session{IDHash: storage.HashSecret("victim-session"), UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour), LastSeen: now}
	if err := a.cache.CreateSession(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	// B reads the session into its cache, then its notifications pile
	// up: heartbeats every 5 ms, each handled in 20 ms.
	if _, err := bCache.Session(t.Context(), s.IDHash); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // B lags some 2 s behind by now

	if _, err := a.cache.DeleteUserSessions(t.Context(), u.ID); err != nil { // a reset, revoke-sessions, disable on A
		t.Fatal(err)
	}
	revoked := time.Now()
	if eventually(1500*time.Millisecond, func() bool {
		_, err := bCache.Session(t.Context(), s.IDHash)
		return err != nil
	}) {
		return
	}
	t.Errorf("B still serves the session %v after A revoked it (live=%v, stats %+v): a lagging listener's stale heartbeats keep the cache live",
		time.Since(revoked).Round(time.Millisecond), bCache.Live(), bCache.Stats())
}
