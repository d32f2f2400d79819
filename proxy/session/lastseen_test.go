package session

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// SS5: at most one write per session per minute, whatever the traffic.
func TestLastSeenAtMostOncePerMinute(t *testing.T) {
	store := newFakeStore()
	clock := webtest.NewClock(epoch)
	l := &LastSeen{Store: store, Clock: clock.Now}
	a, b := storage.HashSecret("a"), storage.HashSecret("b")
	flush := func() {
		t.Helper()
		if err := l.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	// Every 5 seconds for 3 minutes, both sessions are seen 10 times; flush every 15 s.
	for step := 0; step < 36; step++ {
		for range 10 {
			l.Seen(a, clock.Now())
			l.Seen(b, clock.Now())
		}
		if step%3 == 2 {
			flush()
		}
		clock.Advance(5 * time.Second)
	}
	flush()
	writes := map[storage.Hash][]time.Time{}
	for _, batch := range store.touches {
		for h, at := range batch {
			writes[h] = append(writes[h], at)
		}
	}
	for name, h := range map[string]storage.Hash{"a": a, "b": b} {
		times := writes[h]
		if len(times) != 3 {
			t.Errorf("session %s written %d times in 3 minutes, want 3", name, len(times))
		}
		for i := 1; i < len(times); i++ {
			if gap := times[i].Sub(times[i-1]); gap < TouchInterval {
				t.Errorf("session %s written twice within %v", name, gap)
			}
		}
	}
	if len(store.touches) != 3 {
		t.Errorf("%d TouchSessions calls, want 3 (one batch per write round)", len(store.touches))
	}
}

func TestLastSeenKeepsLatestTime(t *testing.T) {
	store := newFakeStore()
	l := &LastSeen{Store: store, Clock: func() time.Time { return epoch }}
	h := storage.HashSecret("a")
	l.Seen(h, epoch.Add(2*time.Second))
	l.Seen(h, epoch.Add(time.Second))
	if err := l.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := store.touches[0][h]; !got.Equal(epoch.Add(2 * time.Second)) {
		t.Fatalf("wrote %v", got)
	}
}

func TestLastSeenRetriesAfterError(t *testing.T) {
	store := newFakeStore()
	l := &LastSeen{Store: store, Clock: func() time.Time { return epoch }}
	h := storage.HashSecret("a")
	l.Seen(h, epoch)
	store.setErr(errors.New("down"))
	if err := l.Flush(t.Context()); err == nil {
		t.Fatal("flush error swallowed")
	}
	store.setErr(nil)
	l.Seen(h, epoch) // not blocked by the failed write
	if err := l.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(store.touches) != 1 || !store.touches[0][h].Equal(epoch) {
		t.Fatalf("touches %v", store.touches)
	}
}

func TestLastSeenRunFlushesAtShutdown(t *testing.T) {
	store := newFakeStore()
	l := &LastSeen{Store: store, Interval: time.Hour}
	l.Seen(storage.HashSecret("a"), time.Now())
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- l.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
	if store.writesFor("a") != 1 {
		t.Fatal("pending last-seen lost at shutdown")
	}
}

func TestLastSeenRunFlushesPeriodically(t *testing.T) {
	store := newFakeStore()
	l := &LastSeen{Store: store, Interval: 10 * time.Millisecond}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { l.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	l.Seen(storage.HashSecret("a"), time.Now())
	deadline := time.Now().Add(5 * time.Second)
	for store.writesFor("a") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no periodic flush")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestTouchIntervalFor(t *testing.T) {
	for _, tc := range []struct{ idle, want time.Duration }{
		{0, TouchInterval},
		{24 * time.Hour, TouchInterval},
		{4 * time.Minute, TouchInterval},
		{2 * time.Minute, 30 * time.Second},
		{40 * time.Second, 10 * time.Second},
	} {
		if got := TouchIntervalFor(tc.idle); got != tc.want {
			t.Errorf("TouchIntervalFor(%s) = %s, want %s", tc.idle, got, tc.want)
		}
		flush := min(DefaultFlushInterval, TouchIntervalFor(tc.idle)/2)
		if tc.idle > 0 && TouchIntervalFor(tc.idle)+flush >= tc.idle {
			t.Errorf("idle %s: a session may be stale for %s", tc.idle, TouchIntervalFor(tc.idle)+flush)
		}
	}
}
