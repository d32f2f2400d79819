package postgres_test

import (
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/postgres/pgtest"
)

// TestOutageFailsClosedAndRecovers: on a server of its own, a replica with a
// cached session loses the database. Every lookup is then an error (the
// proxy answers 503), never the cached session; when the database is back,
// the replica serves again by itself.
func TestOutageFailsClosedAndRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second PostgreSQL server")
	}
	own, err := pgtest.Start()
	if err != nil {
		pgtest.Missing(t, err.Error())
	}
	defer own.Stop()
	r := newReplica(t, own.NewDatabase(t))
	if !eventually(5*time.Second, r.cache.Live) {
		t.Fatal("cache never live")
	}
	now := time.Now().UTC()
	if err := r.store.CreateUser(t.Context(), storage.User{ID: "u", Email: "u@example.com", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	sess := storage.Session{IDHash: storage.HashSecret("s"), UserID: "u", CreatedAt: now, ExpiresAt: now.Add(time.Hour), LastSeen: now}
	if err := r.cache.CreateSession(t.Context(), sess); err != nil {
		t.Fatal(err)
	}
	first, second := r.serves(t, sess.IDHash), r.serves(t, sess.IDHash) // the second from the cache
	if !first || !second || r.cache.Stats().Hits == 0 {
		t.Fatal("session not served from the cache before the outage")
	}
	if err := own.Halt(); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		_, err := r.cache.Session(t.Context(), sess.IDHash)
		if err == nil {
			t.Fatal("database down: a session was served (from memory)")
		}
		// What an admin command would tell the operator.
		if class := storage.FailureClass(err); class != storage.FailureUnavailable {
			t.Fatalf("database down: failure class %s of %v, want %s", class, err, storage.FailureUnavailable)
		}
	}
	if err := own.Resume(); err != nil {
		t.Fatal(err)
	}
	ok := eventually(20*time.Second, func() bool {
		_, err := r.cache.Session(t.Context(), sess.IDHash)
		return err == nil && r.cache.Live()
	})
	if !ok {
		t.Fatal("the replica did not recover after the database came back")
	}
}
