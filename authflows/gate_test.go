package authflows

import (
	"net/http"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/session"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// The auth handlers ask the proxy's gate: activity under /auth/ refreshes the
// idle timeout exactly as proxied activity does, and a session the gate
// refuses is refused here too.
func TestAuthActivityRefreshesIdle(t *testing.T) {
	var lastSeen *session.LastSeen
	var gone []storage.Hash
	e := newTestEnv(t, func(c *Config) {
		c.SessionIdleTTL = 30 * time.Minute
		lastSeen = &session.LastSeen{Store: c.Store.(session.SessionToucher), Clock: c.Clock}
		c.Gate = &session.Gate{
			Sessions: c.Store, CookieName: c.CookieName, IdleTTL: c.SessionIdleTTL,
			LastSeen: lastSeen, Clock: c.Clock,
			Gone: func(h storage.Hash) { gone = append(gone, h) },
		}
	})
	u := e.CreateUser(t, "idle@example.com", "")
	cookie := e.StartSession(t, u)

	// Twenty minutes of activity under /auth/ only, every ten minutes.
	for range 2 {
		e.Clock.Advance(10 * time.Minute)
		if res := e.Get("/auth/me", cookie); res.StatusCode != http.StatusOK {
			t.Fatalf("/auth/me: status %d", res.StatusCode)
		}
		if err := lastSeen.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	s, err := e.Store.Session(t.Context(), storage.HashSecret(cookie.Value))
	if err != nil {
		t.Fatal(err)
	}
	if want := e.Clock.Now(); !s.LastSeen.Equal(want) {
		t.Fatalf("LastSeen %v after /auth/ activity, want %v", s.LastSeen, want)
	}
	// 25 minutes after the last /auth/ request: 45 minutes since sign-in,
	// yet within the idle limit because /auth/ activity counted.
	e.Clock.Advance(25 * time.Minute)
	if res := e.Get("/auth/me", cookie); res.StatusCode != http.StatusOK {
		t.Fatalf("/auth/me within the idle limit: status %d", res.StatusCode)
	}
	e.Clock.Advance(31 * time.Minute) // nothing flushed since minute 20
	if res := e.Get("/auth/me", cookie); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/auth/me idle past the limit: status %d, want 401", res.StatusCode)
	}
	if len(gone) != 1 || gone[0] != storage.HashSecret(cookie.Value) {
		t.Fatalf("gate reported %d gone sessions, want the idle one", len(gone))
	}
}

// Logout tells the gate the session is gone, so that whatever is cached for
// it (the signed assertion) goes at once, not on its next request.
func TestLogoutReportsSessionGone(t *testing.T) {
	var gone []storage.Hash
	e := newTestEnv(t, func(c *Config) {
		c.Gate = &session.Gate{Sessions: c.Store, CookieName: c.CookieName, IdleTTL: c.SessionIdleTTL, Clock: c.Clock,
			Gone: func(h storage.Hash) { gone = append(gone, h) }}
	})
	u := e.CreateUser(t, "bye@example.com", "")
	cookie := e.StartSession(t, u)
	if res := e.PostJSON("/auth/logout", nil, cookie); res.StatusCode != http.StatusNoContent {
		t.Fatalf("logout: status %d", res.StatusCode)
	}
	if len(gone) != 1 || gone[0] != storage.HashSecret(cookie.Value) {
		t.Fatalf("gate told of %d gone sessions, want the logged-out one", len(gone))
	}
}
