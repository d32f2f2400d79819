package bolt

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
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

// populate writes sessions to a new store file without fsync, closes it and
// reopens it with fsync, as a server would find it.
func populate(b *testing.B, sessions []storage.Session) *Store {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for chunk := range sliceChunks(sessions, 250_000) {
		if err := s.ImportSessions(b.Context(), chunk); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	info, _ := os.Stat(path)
	b.Logf("populated %d sessions in %v, file %d MB", len(sessions), time.Since(start).Round(time.Millisecond), info.Size()>>20)
	s, err = Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

func sliceChunks[T any](s []T, size int) func(yield func([]T) bool) {
	return func(yield func([]T) bool) {
		for len(s) > 0 {
			n := min(size, len(s))
			if !yield(s[:n]) {
				return
			}
			s = s[n:]
		}
	}
}

// largeBench reports whether the one-million-session cases run: not with -short.
func largeBench(b *testing.B, n int) {
	if n >= 1_000_000 && testing.Short() && os.Getenv("GATEHOUSE_BENCH_LARGE") != "1" {
		b.Skip("1M sessions: skipped with -short unless GATEHOUSE_BENCH_LARGE=1")
	}
}

// BenchmarkSessionLookup is the per-request cost: Session of a stored hash.
func BenchmarkSessionLookup(b *testing.B) {
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			largeBench(b, n)
			sessions := benchSessions(n, 1)
			s := populate(b, sessions)
			ctx := b.Context()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i = (i + 7919) % n // a prime stride: no locality between lookups
				if _, err := s.Session(ctx, sessions[i].IDHash); err != nil {
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
	s := populate(b, sessions)
	ctx := b.Context()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := rand.IntN(n)
		for pb.Next() {
			i = (i + 7919) % n
			if _, err := s.Session(ctx, sessions[i].IDHash); err != nil {
				b.Error(err)
				return
			}
		}
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
