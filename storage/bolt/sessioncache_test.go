package bolt

import (
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// A read fills the cache, the next read is served from it, and any write
// transaction makes every record stale, the ones it did not touch included.
func TestSessionCacheServesUntilAWrite(t *testing.T) {
	s, sess := storeWithSession(t, filepath.Join(t.TempDir(), "cache.db"))
	defer s.Close()
	ctx := t.Context()
	now := time.Now()
	u := storage.User{ID: sess.UserID}
	if _, ok := s.sessions.get(sess.IDHash); ok {
		t.Fatal("cache holds a session nobody read")
	}
	if _, err := s.Session(ctx, sess.IDHash); err != nil {
		t.Fatal(err)
	}
	if got, ok := s.sessions.get(sess.IDHash); !ok || got.UserID != u.ID {
		t.Fatalf("after a read, cache has %+v, %v; want the session", got, ok)
	}
	if _, err := s.Session(ctx, storage.HashSecret("unknown")); err == nil {
		t.Fatal("unknown session found")
	}
	if n := s.sessions.len(); n != 1 {
		t.Fatalf("cache holds %d records, want 1 (unknown ids are not kept)", n)
	}
	// A write about something else entirely still ends the record's use.
	if err := s.CreateUser(ctx, storage.User{ID: "fedcba9876543210fedcba9876543210", Email: "b@example.com", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.sessions.get(sess.IDHash); ok {
		t.Fatal("cache served a record read before a write")
	}
}

func TestSessionCacheBounded(t *testing.T) {
	var c sessionCache
	gen := c.generation()
	for i := range maxCachedSessions + maxCachedSessions/4 {
		var h storage.Hash
		binary.BigEndian.PutUint64(h[:], uint64(i)*0x9e3779b97f4a7c15) // spread over the shards
		c.put(storage.Session{IDHash: h}, gen)
	}
	if n := c.len(); n > maxCachedSessions || n < maxCachedSessions/2 {
		t.Fatalf("cache holds %d records after %d puts, want at most %d and not emptied", n, maxCachedSessions+maxCachedSessions/4, maxCachedSessions)
	}
	c.invalidate()
	var h storage.Hash
	c.put(storage.Session{IDHash: h}, gen) // read before the write: not kept
	if _, ok := c.get(h); ok {
		t.Fatal("a record read before a write was kept")
	}
}

// A full shard drops the records no read may serve any more (read before
// the last write: those of deleted and revoked sessions among them) before
// it drops any current one.
func TestSessionCacheEvictsStaleRecordsFirst(t *testing.T) {
	var c sessionCache
	perShard := maxCachedSessions / sessionCacheShards
	stale := c.generation()
	var h storage.Hash
	for i := range perShard {
		binary.BigEndian.PutUint64(h[1:], uint64(i)) // h[0] = 0: all in shard 0
		c.put(storage.Session{IDHash: h}, stale)
	}
	c.invalidate()
	current := c.generation()
	var fresh storage.Hash
	binary.BigEndian.PutUint64(fresh[1:], uint64(perShard))
	c.put(storage.Session{IDHash: fresh}, current)
	if n := c.len(); n != 1 {
		t.Fatalf("after a put into a shard full of stale records, it holds %d, want only the current one", n)
	}
	if _, ok := c.get(fresh); !ok {
		t.Fatal("the current record is not served")
	}
}

// A closed store answers nothing from memory: once the lock is released,
// another process may revoke what it remembers (found by an attack review).
func TestSessionCacheNotServedAfterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "closed.db")
	s, sess := storeWithSession(t, path)
	ctx := t.Context()
	if _, err := s.Session(ctx, sess.IDHash); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	other, err := Open(path, Options{NoSync: true}) // the admin CLI, say
	if err != nil {
		t.Fatal(err)
	}
	if err := other.DeleteSession(ctx, sess.IDHash); err != nil {
		t.Fatal(err)
	}
	_ = other.Close()
	if got, err := s.Session(ctx, sess.IDHash); err == nil {
		t.Fatalf("closed store served session %x from memory", got.IDHash[:4])
	}
}

// A write transaction that changed nothing (errNoWrite: an unknown OAuth
// state, an unknown session deleted) keeps the cache: otherwise any
// unauthenticated request could empty it.
func TestSessionCacheKeptByRolledBackLookup(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "nowrite.db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	gen := s.sessions.generation()
	if err := s.DeleteSession(t.Context(), storage.HashSecret("unknown")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeOAuthFlow(t.Context(), storage.HashSecret("unknown state"), time.Now()); err == nil {
		t.Fatal("unknown OAuth state taken")
	}
	if got := s.sessions.generation(); got != gen {
		t.Fatalf("generation moved from %d to %d without a write", gen, got)
	}
}

// storeWithSession opens a store at path holding one user and one session
// of theirs, nobody having read it yet.
func storeWithSession(t *testing.T, path string) (*Store, storage.Session) {
	t.Helper()
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	u := storage.User{ID: "0123456789abcdef0123456789abcdef", Email: "a@example.com", CreatedAt: now}
	if err := s.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	sess := storage.Session{IDHash: storage.HashSecret("cached"), UserID: u.ID, Email: u.Email, CreatedAt: now, ExpiresAt: now.Add(time.Hour), LastSeen: now}
	if err := s.CreateSession(t.Context(), sess); err != nil {
		t.Fatal(err)
	}
	return s, sess
}
