package authflows

import (
	"net/netip"
	"sync"
	"time"
)

// keyedLimiter is a token bucket per key (a client IP or an account): burst
// tokens, one back every period/burst. A bucket is kept as the time at which
// it is full again, so a take and a refund are exact, whatever the clock. Full
// buckets are dropped, so the map cannot grow without bound under a flood of
// distinct keys.
type keyedLimiter struct {
	mu       sync.Mutex
	interval time.Duration // time for one token to come back
	burst    int
	now      func() time.Time
	fullAt   map[string]time.Time // a key without an entry is full
	swept    time.Time

	// shared, when set, counts in a store shared by replicas (see share);
	// the map above is then the fallback while the store does not answer.
	shared  RateStore
	bucket  string
	period  time.Duration
	onError func(bucket string, err error)
}

// newKeyedLimiter allows burst events per key at once, refilled over period.
func newKeyedLimiter(burst int, period time.Duration, now func() time.Time) *keyedLimiter {
	return &keyedLimiter{
		interval: period / time.Duration(burst),
		burst:    burst,
		now:      now,
		fullAt:   map[string]time.Time{},
	}
}

// allow takes one token for key and reports whether one was there.
func (k *keyedLimiter) allow(key string) bool {
	if k.shared != nil {
		if allowed, ok := k.allowShared(key); ok {
			return allowed
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	k.sweep(now)
	full := k.fullAt[key]
	if full.Before(now) {
		full = now
	}
	// Tokens left: (period - (full - now)) / interval; at least one is needed.
	if full.Sub(now) > time.Duration(k.burst-1)*k.interval {
		return false
	}
	k.fullAt[key] = full.Add(k.interval)
	return true
}

// refund gives back a token that allow took for an event that, in the end,
// does not count (a sign-in that succeeded or could not be checked).
func (k *keyedLimiter) refund(key string) {
	if k.shared != nil {
		k.refundShared(key)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	full, ok := k.fullAt[key]
	if !ok {
		return
	}
	now := k.now()
	if full = full.Add(-k.interval); !full.After(now) {
		delete(k.fullAt, key)
		return
	}
	k.fullAt[key] = full
}

// sweep drops, at most once a minute, the buckets that are full again.
func (k *keyedLimiter) sweep(now time.Time) {
	if now.Sub(k.swept) < time.Minute {
		return
	}
	k.swept = now
	for key, full := range k.fullAt {
		if !full.After(now) {
			delete(k.fullAt, key)
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
	// deviceFailures counts failed logins from a browser with a valid
	// device cookie for the account, per cookie, instead of loginFailures (DV1).
	deviceFailures *keyedLimiter
	forgotIP       *keyedLimiter // POST /auth/forgot per client IP (silent)
	forgotAccount  *keyedLimiter // reset mails per account (silent)
	resetIP        *keyedLimiter // POST /auth/reset per client IP
	// passwordIP and inviteIP are the account page's password change and
	// the invitation form per client IP: buckets of their own, so that
	// neither spends POST /auth/reset's floor.
	passwordIP *keyedLimiter
	inviteIP   *keyedLimiter
	// secondFactorFailures counts failed second factors per account (user
	// id), secondFactorDevice per device cookie of the account's owner
	// instead (DV1).
	secondFactorFailures *keyedLimiter
	secondFactorDevice   *keyedLimiter
}

func newLimits(now func() time.Time) *limits {
	return &limits{
		loginIP:        newKeyedLimiter(60, time.Minute, now),
		loginFailures:  newKeyedLimiter(10, 15*time.Minute, now),
		deviceFailures: newKeyedLimiter(10, 15*time.Minute, now),
		forgotIP:       newKeyedLimiter(60, time.Minute, now),
		forgotAccount:  newKeyedLimiter(3, 15*time.Minute, now),
		resetIP:        newKeyedLimiter(60, time.Minute, now),
		passwordIP:     newKeyedLimiter(60, time.Minute, now),
		inviteIP:       newKeyedLimiter(60, time.Minute, now),

		secondFactorFailures: newKeyedLimiter(5, 15*time.Minute, now),
		secondFactorDevice:   newKeyedLimiter(5, 15*time.Minute, now),
	}
}

// clientKey is the per-client throttling key of an address: the address for
// IPv4, its /64 network for IPv6, since one subscriber usually holds a whole
// /64 and could otherwise take a fresh bucket per request.
func clientKey(a netip.Addr) string {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
