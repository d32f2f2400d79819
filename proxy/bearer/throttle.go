package bearer

import (
	"context"
	"net/netip"
	"sync"
	"time"
)

// Throttle floors: a client may present this many bad bearer credentials a
// period before it gets 429, as sign-ins are throttled per client IP.
const (
	DefaultThrottleBurst  = 60
	DefaultThrottlePeriod = time.Minute
	// ThrottleBucket names the shared bucket (Throttle.Shared).
	ThrottleBucket = "bearer_ip"
	sharedTimeout  = 2 * time.Second
)

// RateCounter counts in a store that replicas share (storage/postgres's
// TakeToken), so the floor holds across replicas.
type RateCounter interface {
	TakeToken(ctx context.Context, bucket, key string, now time.Time, burst int, period time.Duration) (bool, error)
}

// Throttle counts the bad bearer credentials (ErrInvalid) of each client:
// a token bucket of Burst per Period and client (an IPv4 address, an IPv6
// /64). The proxy asks Blocked before it verifies anything (a blocked
// client gets 429 at no cost) and calls Failed for each ErrInvalid, which
// reports whether the client is still within the floor (401) or not (429).
// Good credentials cost nothing. The zero value (plus a Clock) is ready;
// it is safe for concurrent use.
type Throttle struct {
	Burst  int           // default DefaultThrottleBurst
	Period time.Duration // default DefaultThrottlePeriod
	Clock  func() time.Time
	// Shared, when set, counts in a store shared by replicas; while it
	// does not answer, this process's own count holds the floor.
	Shared  RateCounter
	OnError func(err error) // hears Shared's failures

	mu     sync.Mutex
	fullAt map[string]time.Time // a client without an entry has a full bucket
	swept  time.Time
}

// Blocked reports whether the client has no bad credential left to spend
// now: it reads only memory.
func (t *Throttle) Blocked(client netip.Addr) bool {
	key := clientKey(client)
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	full, ok := t.fullAt[key]
	return ok && full.Sub(now) > time.Duration(t.burst()-1)*t.interval()
}

// Failed counts one bad credential of the client and reports whether it
// was within the floor; false: answer 429.
func (t *Throttle) Failed(ctx context.Context, client netip.Addr) bool {
	key := clientKey(client)
	now := t.now()
	if t.Shared != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedTimeout)
		allowed, err := t.Shared.TakeToken(ctx, ThrottleBucket, key, now, t.burst(), t.period())
		cancel()
		if err == nil {
			if !allowed {
				t.mu.Lock()
				t.setEmpty(key, now)
				t.mu.Unlock()
			}
			return allowed
		}
		if t.OnError != nil {
			t.OnError(err)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(now)
	full := t.fullAt[key]
	if full.Before(now) {
		full = now
	}
	if full.Sub(now) > time.Duration(t.burst()-1)*t.interval() {
		return false
	}
	if t.fullAt == nil {
		t.fullAt = map[string]time.Time{}
	}
	t.fullAt[key] = full.Add(t.interval())
	return true
}

// setEmpty marks the client's bucket empty for one interval (the shared
// store said so); the caller holds mu.
func (t *Throttle) setEmpty(key string, now time.Time) {
	if t.fullAt == nil {
		t.fullAt = map[string]time.Time{}
	}
	if empty := now.Add(t.period()); t.fullAt[key].Before(empty) {
		t.fullAt[key] = empty
	}
}

// sweep drops, at most once a minute, the buckets that are full again.
func (t *Throttle) sweep(now time.Time) {
	if now.Sub(t.swept) < time.Minute {
		return
	}
	t.swept = now
	for key, full := range t.fullAt {
		if !full.After(now) {
			delete(t.fullAt, key)
		}
	}
}

func (t *Throttle) burst() int {
	if t.Burst > 0 {
		return t.Burst
	}
	return DefaultThrottleBurst
}

func (t *Throttle) period() time.Duration {
	if t.Period > 0 {
		return t.Period
	}
	return DefaultThrottlePeriod
}

func (t *Throttle) interval() time.Duration { return t.period() / time.Duration(t.burst()) }

func (t *Throttle) now() time.Time {
	if t.Clock != nil {
		return t.Clock()
	}
	return time.Now()
}

// clientKey is the throttling key of an address: the address for IPv4, its
// /64 network for IPv6 (one subscriber usually holds a whole /64), as for
// sign-ins.
func clientKey(a netip.Addr) string {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
