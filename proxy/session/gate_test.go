package session

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// newGate is a Gate over a fake store, judging at epoch, with an idle TTL
// of an hour and a LastSeen batcher.
func newGate() (*Gate, *fakeStore) {
	store := newFakeStore()
	clock := webtest.NewClock(epoch)
	return &Gate{
		Sessions: store, CookieName: cookieName, IdleTTL: time.Hour, Clock: clock.Now,
		LastSeen: &LastSeen{Store: store, Clock: clock.Now},
	}, store
}

func withSessionCookie(value string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/app", nil)
	if value != "" {
		r.Header.Set("Cookie", cookieName+"="+value)
	}
	return r
}

// SS3, SS5: a session is signed in while it is known, before its absolute
// expiry and within the idle limit; anything else is nobody and writes
// nothing, neither a record nor a last-seen time.
func TestGateSessionStates(t *testing.T) {
	for _, tc := range []struct {
		name    string
		session *storage.Session // nil: no record
		cookie  string
		ok      bool
	}{
		{"valid", &storage.Session{ExpiresAt: epoch.Add(time.Hour), LastSeen: epoch.Add(-time.Minute)}, sessionID, true},
		{"no cookie", &storage.Session{ExpiresAt: epoch.Add(time.Hour), LastSeen: epoch}, "", false},
		{"unknown id", nil, "random-cookie-value", false},
		{"empty value", nil, `""`, false},
		{"absolute expiry reached", &storage.Session{ExpiresAt: epoch, LastSeen: epoch}, sessionID, false},
		{"absolute expiry passed", &storage.Session{ExpiresAt: epoch.Add(-time.Second), LastSeen: epoch}, sessionID, false},
		{"idle too long", &storage.Session{ExpiresAt: epoch.Add(time.Hour), LastSeen: epoch.Add(-time.Hour)}, sessionID, false},
		{"idle just within", &storage.Session{ExpiresAt: epoch.Add(time.Hour), LastSeen: epoch.Add(-time.Hour + time.Second)}, sessionID, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, store := newGate()
			if tc.session != nil {
				s := *tc.session
				s.UserID = "u1"
				store.put(sessionID, s)
			}
			records := store.count()
			s, ok, err := g.Check(withSessionCookie(tc.cookie))
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.ok || (ok && s.UserID != "u1") {
				t.Fatalf("Check = %+v, %v; want signed in %v", s, ok, tc.ok)
			}
			if err := g.LastSeen.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			if !tc.ok && (store.count() != records || store.touchCalls() != 0) {
				t.Errorf("rejected session wrote: %d records (was %d), %d touches", store.count(), records, store.touchCalls())
			}
		})
	}
}

// SS9: a store error is returned, never "signed in" and never "nobody".
func TestGateStoreErrorIsReturned(t *testing.T) {
	g, store := newGate()
	store.put(sessionID, storage.Session{ExpiresAt: epoch.Add(time.Hour), LastSeen: epoch})
	down := errors.New("disk on fire")
	store.setErr(down)
	if _, ok, err := g.Check(withSessionCookie(sessionID)); !errors.Is(err, down) || ok {
		t.Fatalf("Check = %v, %v; want the store's error", ok, err)
	}
}

// Gone hears of every cookie whose session no longer authenticates, so
// that what is cached for it goes; a valid session is not reported.
func TestGateReportsGoneSessions(t *testing.T) {
	g, store := newGate()
	var gone []storage.Hash
	g.Gone = func(h storage.Hash) { gone = append(gone, h) }
	store.put(sessionID, storage.Session{ExpiresAt: epoch.Add(time.Hour), LastSeen: epoch})
	store.put("expired", storage.Session{ExpiresAt: epoch, LastSeen: epoch})
	for _, id := range []string{sessionID, "expired", "unknown"} {
		if _, _, err := g.Check(withSessionCookie(id)); err != nil {
			t.Fatal(err)
		}
	}
	want := []storage.Hash{storage.HashSecret("expired"), storage.HashSecret("unknown")}
	if len(gone) != 2 || gone[0] != want[0] || gone[1] != want[1] {
		t.Fatalf("Gone heard %d hashes, want those of the expired and the unknown cookie", len(gone))
	}
}

// A session whose stored LastSeen is older than the touch interval is
// queued for a write; a fresh one is not. Every store read is timed.
func TestGateQueuesStaleSessions(t *testing.T) {
	g, store := newGate()
	var lookups int
	g.Lookup = observerFunc(func(float64) { lookups++ })
	store.put("fresh", storage.Session{ExpiresAt: epoch.Add(time.Hour), LastSeen: epoch.Add(-10 * time.Second)})
	store.put("stale", storage.Session{ExpiresAt: epoch.Add(time.Hour), LastSeen: epoch.Add(-2 * time.Minute)})
	for _, id := range []string{"fresh", "stale"} {
		if _, ok, err := g.Check(withSessionCookie(id)); !ok || err != nil {
			t.Fatalf("%s: Check = %v, %v", id, ok, err)
		}
	}
	g.Check(withSessionCookie("")) // no cookie: no read to time
	if err := g.LastSeen.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if store.writesFor("fresh") != 0 || store.writesFor("stale") != 1 {
		t.Fatalf("writes: fresh %d, stale %d; want 0 and 1", store.writesFor("fresh"), store.writesFor("stale"))
	}
	if lookups != 2 || store.reads.Load() != 2 {
		t.Fatalf("%d lookups timed, %d store reads; want 2 and 2", lookups, store.reads.Load())
	}
}

type observerFunc func(float64)

func (f observerFunc) Observe(v float64) { f(v) }
