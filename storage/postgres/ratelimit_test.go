package postgres_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage/postgres"
)

// TestRateLimitCountedInDatabase: a bucket of 3 per 15 minutes, taken
// through two stores (two replicas), allows 3 in all, refills one token
// per 5 minutes, takes refunds, and keeps keys and buckets apart.
func TestRateLimitCountedInDatabase(t *testing.T) {
	url := pg.NewDatabase(t)
	a, err := postgres.Open(t.Context(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := postgres.Open(t.Context(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	now := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	const burst, period = 3, 15 * time.Minute
	take := func(s *postgres.Store, bucket, key string, at time.Time) bool {
		t.Helper()
		ok, err := s.TakeToken(t.Context(), bucket, key, at, burst, period)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	for i, s := range []*postgres.Store{a, b, a} {
		if !take(s, "forgot", "alice", now) {
			t.Fatalf("take %d of %d refused", i+1, burst)
		}
	}
	if take(b, "forgot", "alice", now) || take(a, "forgot", "alice", now) {
		t.Fatal("a fourth token taken: the replicas count apart")
	}
	if !take(a, "forgot", "bob", now) || !take(a, "login", "\x00\xff binary key", now) {
		t.Fatal("another key or bucket is throttled too")
	}
	if take(a, "forgot", "alice", now.Add(5*time.Minute-time.Microsecond)) {
		t.Fatal("a token came back before its interval")
	}
	if !take(b, "forgot", "alice", now.Add(5*time.Minute)) {
		t.Fatal("no token back after one interval")
	}
	if err := a.RefundToken(t.Context(), "forgot", "alice", now.Add(5*time.Minute), burst, period); err != nil {
		t.Fatal(err)
	}
	if !take(b, "forgot", "alice", now.Add(5*time.Minute)) {
		t.Fatal("the refunded token is not there")
	}
	if n, err := a.DeleteFullRateBuckets(t.Context(), now.Add(time.Hour)); err != nil || n != 3 {
		t.Fatalf("DeleteFullRateBuckets = %d, %v; want the 3 buckets", n, err)
	}

	// Many takes at once on both replicas: exactly burst succeed.
	var wg sync.WaitGroup
	var taken atomic.Int32
	for i := range 20 {
		s := []*postgres.Store{a, b}[i%2]
		wg.Go(func() {
			if ok, err := s.TakeToken(t.Context(), "race", "k", now, burst, period); err != nil {
				t.Error(err)
			} else if ok {
				taken.Add(1)
			}
		})
	}
	wg.Wait()
	if taken.Load() != burst {
		t.Fatalf("%d concurrent takes succeeded, want %d", taken.Load(), burst)
	}
}
