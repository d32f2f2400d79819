package proxy

import (
	"context"
	"errors"
	"net/http"
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

// SS5 through the proxy: stale sessions are queued, never written on the
// request path, and written once per minute.
func TestProxyRecordsLastSeenOffRequestPath(t *testing.T) {
	e := newEnv(t)
	e.signIn(sessionID) // LastSeen 10 s ago: fresh enough, nothing queued
	for range 5 {
		e.serve(withCookie(get("/app"), sessionID))
	}
	if err := e.lastSeen.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if e.store.touchCalls() != 0 {
		t.Fatal("fresh session written")
	}

	e.clock.Advance(2 * time.Minute) // now stale
	for range 50 {
		e.serve(withCookie(get("/app"), sessionID))
	}
	if e.store.touchCalls() != 0 {
		t.Fatal("last-seen written on the request path")
	}
	if err := e.lastSeen.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if e.store.writesFor(sessionID) != 1 {
		t.Fatalf("%d writes, want 1", e.store.writesFor(sessionID))
	}
	s, _ := e.store.Session(t.Context(), storage.HashSecret(sessionID))
	if !s.LastSeen.Equal(e.clock.Now()) {
		t.Fatalf("stored LastSeen %v, want %v", s.LastSeen, e.clock.Now())
	}

	e.clock.Advance(30 * time.Second)
	e.serve(withCookie(get("/app"), sessionID))
	e.lastSeen.Flush(t.Context())
	if e.store.writesFor(sessionID) != 1 {
		t.Fatal("written again within a minute")
	}
	e.clock.Advance(31 * time.Second)
	e.serve(withCookie(get("/app"), sessionID))
	e.lastSeen.Flush(t.Context())
	if e.store.writesFor(sessionID) != 2 {
		t.Fatal("not written after a minute")
	}
}

// Issue 10, item 8: with an idle TTL shorter than the default touch interval,
// a session used every few seconds stays active in the store: last-seen is
// written often enough that the idle sweep never takes it.
func TestShortIdleTTLKeepsActiveSessions(t *testing.T) {
	const idle = 40 * time.Second
	e := newEnv(t, func(c *Config) { c.IdleTTL = idle })
	e.signIn(sessionID)
	h := storage.HashSecret(sessionID)
	for step := range 60 { // 5 minutes of use, one request every 5 s
		e.clock.Advance(5 * time.Second)
		if res := e.serve(withCookie(get("/app"), sessionID)); res.StatusCode != http.StatusOK {
			t.Fatalf("step %d: active session refused: %d", step, res.StatusCode)
		}
		if step%2 == 1 { // a flush at every second request: Run's period for this TTL
			if err := e.lastSeen.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		s, err := e.store.Session(t.Context(), h)
		if err != nil {
			t.Fatal(err)
		}
		if !s.Active(e.clock.Now(), idle) {
			t.Fatalf("step %d: stored LastSeen %v is idle at %v: the sweep would delete an active session",
				step, s.LastSeen, e.clock.Now())
		}
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
