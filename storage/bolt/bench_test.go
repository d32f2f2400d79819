package bolt

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// benchSessions returns n sessions with random hashes, spread over n/4+1
// users, expiring over the next week.
func benchSessions(n int, seed uint64) []storage.Session {
	rng := rand.New(rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}))
	now := time.Now()
	users := n/4 + 1
	sessions := make([]storage.Session, n)
	for i := range sessions {
		s := &sessions[i]
		for j := range s.IDHash {
			s.IDHash[j] = byte(rng.Uint32())
		}
		u := rng.IntN(users)
		s.UserID = fmt.Sprintf("%032x", u)
		s.Email = fmt.Sprintf("user%d@example.com", u)
		s.CreatedAt = now
		s.ExpiresAt = now.Add(time.Duration(rng.Int64N(int64(7 * 24 * time.Hour))))
		s.LastSeen = now
	}
	return sessions
}

// populate writes sessions to a new store file in one transaction without
// fsync (a compact file, as a long-running server's would be), closes it,
// reopens it with fsync as a server would, and collects the garbage so that
// the timed loop does not pay for the set-up.
func populate(b *testing.B, sessions []storage.Session) *Store {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := s.ImportSessions(b.Context(), sessions); err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	info, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("populated %d sessions in %v, file %d MB", len(sessions), elapsed.Round(time.Millisecond), info.Size()>>20)
	if s, err = Open(path, Options{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	runtime.GC()
	return s
}

// hashesOf returns the session hashes, so the sessions themselves can be collected.
func hashesOf(sessions []storage.Session) []storage.Hash {
	hashes := make([]storage.Hash, len(sessions))
	for i := range sessions {
		hashes[i] = sessions[i].IDHash
	}
	return hashes
}

// largeBench reports whether the one-million-session cases run: not with -short.
func largeBench(b *testing.B, n int) {
	if n >= 1_000_000 && testing.Short() && os.Getenv("GATEHOUSETEST_BENCH_LARGE") != "1" {
		b.Skip("1M sessions: skipped with -short unless GATEHOUSETEST_BENCH_LARGE=1")
	}
}

// BenchmarkSessionLookup is the per-request cost: Session of a stored hash.
// Up to maxCachedSessions sessions in use, every lookup but the first comes
// from the session cache; past it, most read the file. The "uncached" case
// invalidates the cache before every lookup (as a write would): the read
// transaction alone.
func BenchmarkSessionLookup(b *testing.B) {
	for _, n := range []int{1_000, -1_000, 100_000, 1_000_000} {
		name := fmt.Sprint(n)
		uncached := n < 0
		if uncached {
			n, name = -n, fmt.Sprint(-n)+"-uncached"
		}
		b.Run(name, func(b *testing.B) {
			largeBench(b, n)
			sessions := benchSessions(n, 1)
			hashes := hashesOf(sessions)
			s := populate(b, sessions)
			ctx := b.Context()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i = (i + 7919) % n // a prime stride: no locality between lookups
				if uncached {
					s.sessions.invalidate()
				}
				if _, err := s.Session(ctx, hashes[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSessionLookupParallel is BenchmarkSessionLookup from all CPUs at once.
func BenchmarkSessionLookupParallel(b *testing.B) {
	const n = 100_000
	sessions := benchSessions(n, 1)
	hashes := hashesOf(sessions)
	s := populate(b, sessions) // once: only the sub-benchmark is run again to size b.N
	b.Run(fmt.Sprint(n), func(b *testing.B) {
		ctx := b.Context()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := rand.IntN(n)
			for pb.Next() {
				i = (i + 7919) % n
				if _, err := s.Session(ctx, hashes[i]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkDeleteUserSessions is one revocation of a user's 1,000 sessions
// among 1,000,000, with fsync. Between calls the 1,000 are imported again
// (not timed).
func BenchmarkDeleteUserSessions(b *testing.B) {
	const n, mine = 1_000_000, 1_000
	largeBench(b, n)
	sessions := benchSessions(n, 2)
	victim := benchSessions(mine, 3)
	for i := range victim {
		victim[i].UserID, victim[i].Email = "victim", "victim@example.com"
	}
	s := populate(b, sessions)
	ctx := b.Context()
	var total time.Duration
	calls := 0
	for b.Loop() {
		b.StopTimer()
		if err := s.ImportSessions(ctx, victim); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		b.StartTimer()
		start := time.Now()
		deleted, err := s.DeleteUserSessions(ctx, "victim")
		total += time.Since(start)
		calls++
		if err != nil || deleted != mine {
			b.Fatalf("DeleteUserSessions = %d, %v; want %d", deleted, err, mine)
		}
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(calls), "ms/call")
}
