package authflows

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// rateStoreFunc is a RateStore whose TakeToken is a function; it records
// the buckets asked.
type rateStoreFunc struct {
	mu      sync.Mutex
	asked   []string
	take    func(bucket string) (bool, error)
	refunds int
}

func (r *rateStoreFunc) TakeToken(ctx context.Context, bucket, key string, now time.Time, burst int, period time.Duration) (bool, error) {
	r.mu.Lock()
	r.asked = append(r.asked, bucket)
	r.mu.Unlock()
	return r.take(bucket)
}

func (r *rateStoreFunc) RefundToken(ctx context.Context, bucket, key string, now time.Time, burst int, period time.Duration) error {
	r.mu.Lock()
	r.refunds++
	r.mu.Unlock()
	return nil
}

// With SharedLimits, the store decides: a bucket it says is empty throttles
// the very first attempt, whatever this process counted.
func TestSharedLimitsDecide(t *testing.T) {
	rs := &rateStoreFunc{take: func(bucket string) (bool, error) { return bucket != "login_failures", nil }}
	env := newTestEnv(t, func(c *Config) { c.SharedLimits = rs })
	env.CreateUser(t, aliceEmail, alicePassword)
	resp := env.PostJSON("/auth/login", map[string]string{"email": aliceEmail, "password": alicePassword})
	if code := env.ProblemCode(t, resp, http.StatusTooManyRequests); code != "rate_limited" {
		t.Fatalf("code %q", code)
	}
	if strings.Join(rs.asked, ",") != "login_ip,login_failures" {
		t.Fatalf("buckets asked: %v", rs.asked)
	}
}

// A shared store that fails leaves each process its own count (the floor
// holds per replica) and says so in the log.
func TestSharedLimitsFallBackToLocal(t *testing.T) {
	rs := &rateStoreFunc{take: func(string) (bool, error) { return false, errors.New("database down") }}
	env := newTestEnv(t, func(c *Config) { c.SharedLimits = rs })
	env.CreateUser(t, aliceEmail, alicePassword)
	for i := range 60 {
		if resp := env.PostJSON("/auth/login", map[string]string{"email": aliceEmail, "password": alicePassword}); resp.StatusCode != http.StatusOK {
			t.Fatalf("login %d: %d", i+1, resp.StatusCode)
		}
	}
	resp := env.PostJSON("/auth/login", map[string]string{"email": aliceEmail, "password": alicePassword})
	env.ProblemCode(t, resp, http.StatusTooManyRequests)
	if !strings.Contains(env.Logs.String(), "throttle counted in this process only") {
		t.Fatal("no log line about the failing shared store")
	}
}
