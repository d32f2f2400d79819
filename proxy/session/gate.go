package session

import (
	"errors"
	"net/http"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// Gate is the one session check of Gatehouse: cookie → store → active? →
// last-seen. The proxy, the /auth/ handlers and the forward-auth check
// endpoints all ask it, so a session means the same everywhere and activity
// under /auth/ refreshes the idle timeout as proxied activity does.
//
// The zero value is not usable: Sessions and CookieName are required. A Gate
// is safe for concurrent use.
type Gate struct {
	Sessions   SessionSource
	CookieName string
	IdleTTL    time.Duration // 0: no idle limit
	// LastSeen, when set, is told about sessions whose stored LastSeen is
	// older than TouchInterval; it writes them off the request path (SS5).
	LastSeen *LastSeen
	// Clock is the time sessions are judged at; nil: the system clock, read
	// once with the lookup timer.
	Clock func() time.Time
	// Lookup, when set, observes the store read's duration in seconds (a
	// prometheus.Observer).
	Lookup interface{ Observe(seconds float64) }
	// Gone, when set, is told the hash of a cookie whose session no longer
	// authenticates (unknown, expired, revoked), so that whatever is cached
	// for it (the signed assertion) is dropped.
	Gone func(storage.Hash)
}

// Check returns the request's active session: one store read per request,
// so a revoked session stops working on the next one (SS3). The id is read
// only from the cookie (SS7). No cookie, an unknown id or an inactive
// session is "not signed in" and writes nothing; any other store error is
// returned, and the caller fails closed (SS9).
func (g *Gate) Check(r *http.Request) (storage.Session, bool, error) {
	id := cookieValue(r.Header, g.CookieName)
	if id == "" {
		return storage.Session{}, false, nil
	}
	idHash := storage.HashSecret(id)
	start := time.Now()
	s, err := g.Sessions.Session(r.Context(), idHash)
	end := time.Now() // also the time the session is judged at, unless a Clock is set
	if g.Lookup != nil {
		g.Lookup.Observe(end.Sub(start).Seconds())
	}
	if errors.Is(err, storage.ErrNotFound) {
		g.gone(idHash)
		return storage.Session{}, false, nil
	}
	if err != nil {
		return storage.Session{}, false, err
	}
	now := end
	if g.Clock != nil {
		now = g.Clock()
	}
	if !s.Active(now, g.IdleTTL) {
		g.gone(idHash)
		return storage.Session{}, false, nil
	}
	if g.LastSeen != nil && now.Sub(s.LastSeen) >= g.LastSeen.touchEvery() {
		g.LastSeen.Seen(idHash, now)
	}
	return s, true, nil
}

func (g *Gate) gone(idHash storage.Hash) {
	if g.Gone != nil {
		g.Gone(idHash)
	}
}
