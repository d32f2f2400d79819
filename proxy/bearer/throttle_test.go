package bearer

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
)

// 60 bad credentials a minute per client pass as 401s; the 61st is 429,
// and a blocked client is refused before anything is verified until a
// credential's worth of time has passed. Other clients are not touched;
// an IPv6 /64 is one client.
func TestThrottleFloor(t *testing.T) {
	clock := webtest.NewClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	th := &Throttle{Clock: clock.Now}
	ctx := t.Context()
	a := netip.MustParseAddr("192.0.2.1")
	for i := range DefaultThrottleBurst {
		if th.Blocked(a) {
			t.Fatalf("blocked after %d bad credentials", i)
		}
		if !th.Failed(ctx, a) {
			t.Fatalf("bad credential %d answered 429, want 401 within the floor of 60", i+1)
		}
	}
	if !th.Blocked(a) {
		t.Fatal("not blocked after 60 bad credentials in a minute")
	}
	if th.Failed(ctx, a) {
		t.Fatal("61st bad credential within the minute: want 429")
	}
	if th.Blocked(netip.MustParseAddr("192.0.2.2")) || !th.Failed(ctx, netip.MustParseAddr("192.0.2.2")) {
		t.Fatal("another client is throttled")
	}
	if !th.Blocked(netip.MustParseAddr("::ffff:192.0.2.1")) {
		t.Fatal("the IPv4-mapped form of the client is another bucket")
	}
	clock.Advance(time.Second) // one credential's worth
	if th.Blocked(a) || !th.Failed(ctx, a) || !th.Blocked(a) {
		t.Fatal("a second later: want exactly one more bad credential")
	}
	clock.Advance(time.Minute)
	if th.Blocked(a) {
		t.Fatal("still blocked a minute later")
	}

	v6 := netip.MustParseAddr("2001:db8:1:2::1")
	for range DefaultThrottleBurst {
		th.Failed(ctx, v6)
	}
	if !th.Blocked(netip.MustParseAddr("2001:db8:1:2:ffff::9")) {
		t.Fatal("another address of the same /64 is another client")
	}
	if th.Blocked(netip.MustParseAddr("2001:db8:1:3::1")) {
		t.Fatal("another /64 is throttled")
	}
}

// rateStore is a shared count that says what the test sets.
type rateStore struct {
	allowed bool
	err     error
	took    int
}

func (r *rateStore) TakeToken(_ context.Context, bucket, key string, _ time.Time, burst int, period time.Duration) (bool, error) {
	if bucket != ThrottleBucket || key != "192.0.2.1" || burst != 60 || period != time.Minute {
		return false, errors.New("unexpected bucket")
	}
	r.took++
	return r.allowed, r.err
}

// With a shared count, its answer decides (the floor across replicas); a
// "no" blocks the client here too; while the store fails, this process's
// own count holds the floor.
func TestThrottleShared(t *testing.T) {
	clock := webtest.NewClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	shared := &rateStore{allowed: true}
	var heard []error
	th := &Throttle{Clock: clock.Now, Shared: shared, OnError: func(err error) { heard = append(heard, err) }}
	a := netip.MustParseAddr("192.0.2.1")
	if !th.Failed(t.Context(), a) || th.Blocked(a) {
		t.Fatal("shared count allows: want 401, not blocked")
	}
	shared.allowed = false // other replicas spent the floor
	if th.Failed(t.Context(), a) || !th.Blocked(a) {
		t.Fatal("shared count refuses: want 429 and blocked")
	}
	clock.Advance(time.Second)
	if th.Blocked(a) {
		t.Fatal("still blocked a second after the shared refusal")
	}
	clock.Advance(time.Minute) // the local bucket is full again
	shared.err = errors.New("database down")
	for i := range DefaultThrottleBurst {
		if !th.Failed(t.Context(), a) {
			t.Fatalf("store down: bad credential %d refused within the local floor", i+1)
		}
	}
	if th.Failed(t.Context(), a) {
		t.Fatal("store down: the local floor does not hold")
	}
	if len(heard) != DefaultThrottleBurst+1 || shared.took != 2+DefaultThrottleBurst+1 {
		t.Fatalf("OnError heard %d failures, the store was asked %d times", len(heard), shared.took)
	}
}
