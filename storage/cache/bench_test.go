package cache_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
	"github.com/gatehouse-auth/gatehouse/storage/cache"
)

// BenchmarkSessionHit is the per-request cost of a cached session check.
func BenchmarkSessionHit(b *testing.B) {
	s, err := bolt.Open(filepath.Join(b.TempDir(), "g.db"), bolt.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := cache.New(s, cache.Options{HeartbeatTimeout: time.Hour})
	c.Resync()
	c.Heartbeat(time.Now())
	now := time.Now()
	sess := storage.Session{IDHash: storage.HashSecret("x"), UserID: "u", CreatedAt: now, ExpiresAt: now.Add(time.Hour), LastSeen: now}
	if err := s.CreateSession(b.Context(), sess); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Session(b.Context(), sess.IDHash); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Session(b.Context(), sess.IDHash); err != nil {
				b.Fatal(err)
			}
		}
	})
	if c.Stats().Hits < uint64(b.N) {
		b.Fatalf("hits %d < %d lookups", c.Stats().Hits, b.N)
	}
}
