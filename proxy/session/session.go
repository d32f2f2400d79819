// Package session is Gatehouse's session primitive: the one session check
// (Gate: cookie → store → active? → last-seen), the batcher that writes
// last-seen times off the request path (LastSeen), and the helpers that
// read, strip and guard Gatehouse's cookies in requests and answers. The
// proxy, its forward-auth check endpoints and the /auth/ handlers all use
// it, so a session means the same everywhere.
//
// Dependencies: session → storage (the record, its hash and its errors).
// It imports neither proxy nor authflows; both import it. The store
// arrives as the two small interfaces declared here.
package session

import (
	"context"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// SessionSource looks up a session by the hash of its id. A missing record
// is storage.ErrNotFound; any other error makes the caller fail closed.
type SessionSource interface {
	Session(ctx context.Context, idHash storage.Hash) (storage.Session, error)
}

// SessionToucher records when sessions were last seen; unknown ones are
// skipped. LastSeen calls it off the request path.
type SessionToucher interface {
	TouchSessions(ctx context.Context, lastSeen map[storage.Hash]time.Time) error
}
