package authflows

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// keyedLimiter is a token bucket per key (a client IP or an account), built
// on x/time/rate. Idle buckets are dropped so the map cannot grow without
// bound under a flood of distinct keys.
type keyedLimiter struct {
	mu      sync.Mutex
	limit   rate.Limit
	burst   int
	now     func() time.Time
	buckets map[string]*rate.Limiter
	swept   time.Time
}

// newKeyedLimiter allows burst events per key at once, refilled over period.
func newKeyedLimiter(burst int, period time.Duration, now func() time.Time) *keyedLimiter {
	return &keyedLimiter{
		limit:   rate.Every(period / time.Duration(burst)),
		burst:   burst,
		now:     now,
		buckets: map[string]*rate.Limiter{},
	}
}

// allow takes one token for key and reports whether one was there.
func (k *keyedLimiter) allow(key string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	k.sweep(now)
	b, ok := k.buckets[key]
	if !ok {
		b = rate.NewLimiter(k.limit, k.burst)
		k.buckets[key] = b
	}
	return b.AllowN(now, 1)
}

// sweep drops, at most once a minute, the buckets that are full again.
func (k *keyedLimiter) sweep(now time.Time) {
	if now.Sub(k.swept) < time.Minute {
		return
	}
	k.swept = now
	for key, b := range k.buckets {
		if b.TokensAt(now) >= float64(k.burst) {
			delete(k.buckets, key)
		}
	}
}

// limits are the throttles of the flows. The contract's floors: 60 requests
// per client IP per minute to each endpoint, 10 failed logins per account per
// 15 minutes, 3 reset mails per account per 15 minutes pass before any
// throttling.
type limits struct {
	loginIP       *keyedLimiter // every POST /auth/login, per client IP
	loginFailures *keyedLimiter // failed logins, per account (normalized email)
	forgotIP      *keyedLimiter // POST /auth/forgot per client IP (silent)
	forgotAccount *keyedLimiter // reset mails per account (silent)
	resetIP       *keyedLimiter // POST /auth/reset per client IP
}

func newLimits(now func() time.Time) *limits {
	return &limits{
		loginIP:       newKeyedLimiter(60, time.Minute, now),
		loginFailures: newKeyedLimiter(10, 15*time.Minute, now),
		forgotIP:      newKeyedLimiter(60, time.Minute, now),
		forgotAccount: newKeyedLimiter(3, 15*time.Minute, now),
		resetIP:       newKeyedLimiter(60, time.Minute, now),
	}
}

// exhausted reports whether key has no token left, without taking one.
func (k *keyedLimiter) exhausted(key string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	b, ok := k.buckets[key]
	return ok && b.TokensAt(k.now()) < 1
}
