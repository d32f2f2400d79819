package bearer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// apiToken judges a credential of the API token shape: one lookup by its
// hash (answered from memory by the store's cache), then expiry and the
// owner's state.
func (v *Verifier) apiToken(ctx context.Context, credential string) (Identity, error) {
	if v.tokens == nil {
		return Identity{}, invalid(ReasonUnknownToken, errors.New("API tokens are not accepted here"))
	}
	h := storage.HashSecret(credential)
	t, owner, err := v.tokens.APITokenByHash(ctx, h)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return Identity{}, invalid(ReasonUnknownToken, nil)
	case err != nil:
		return Identity{}, unavailable(ReasonStore, err)
	}
	now := v.now()
	if t.Expired(now) {
		return Identity{}, invalid(ReasonExpired, fmt.Errorf("API token %s expired at %s", t.ID, t.ExpiresAt.UTC().Format(time.RFC3339)))
	}
	id := Identity{AMR: AMRToken, TokenID: t.ID, ExpiresAt: t.ExpiresAt}
	if t.Service != "" {
		id.UserID, id.Groups = ServicePrefix+t.Service, t.Groups
	} else {
		if owner.Disabled {
			return Identity{}, invalid(ReasonOwnerDisabled, fmt.Errorf("API token %s", t.ID))
		}
		id.UserID, id.Email = t.UserID, owner.Email
	}
	v.lastUsed.seen(h, now)
	return id, nil
}

// Last use of API tokens.
const (
	// TouchInterval: a token's stored LastUsed is written at most once
	// per interval.
	TouchInterval = time.Minute
	// FlushInterval is how often Run writes the recorded times.
	FlushInterval = 15 * time.Second
)

// lastUsed batches the last-use times of API tokens in memory, as the
// proxy's LastSeen does for sessions: the request path records, Run
// writes them with one TouchAPITokens call.
type lastUsed struct {
	mu      sync.Mutex
	pending map[storage.Hash]time.Time // to write at the next flush
	written map[storage.Hash]time.Time // written less than TouchInterval ago
}

// seen records that the token under h was used at at, unless its use was
// written less than TouchInterval before.
func (l *lastUsed) seen(h storage.Hash, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w, ok := l.written[h]; ok && at.Sub(w) < TouchInterval {
		return
	}
	if l.pending == nil {
		l.pending = map[storage.Hash]time.Time{}
	}
	if prev, ok := l.pending[h]; !ok || at.After(prev) {
		l.pending[h] = at
	}
}

// take returns the pending times and marks them written at their time;
// marks older than TouchInterval at now are forgotten.
func (l *lastUsed) take(now time.Time) map[storage.Hash]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	for h, w := range l.written {
		if now.Sub(w) >= TouchInterval {
			delete(l.written, h)
		}
	}
	if len(l.pending) == 0 {
		return nil
	}
	batch := l.pending
	l.pending = nil
	if l.written == nil {
		l.written = map[storage.Hash]time.Time{}
	}
	for h, at := range batch {
		l.written[h] = at
	}
	return batch
}

// giveBack keeps a batch that could not be written for the next flush.
func (l *lastUsed) giveBack(batch map[storage.Hash]time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == nil {
		l.pending = map[storage.Hash]time.Time{}
	}
	for h, at := range batch {
		if w, ok := l.written[h]; ok && w.Equal(at) {
			delete(l.written, h)
		}
		if prev, ok := l.pending[h]; !ok || at.After(prev) {
			l.pending[h] = at
		}
	}
}

// FlushLastUsed writes the recorded last-use times now; on failure they
// are kept for the next flush.
func (v *Verifier) FlushLastUsed(ctx context.Context) error {
	batch := v.lastUsed.take(v.now())
	if len(batch) == 0 || v.tokens == nil {
		return nil
	}
	if err := v.tokens.TouchAPITokens(ctx, batch); err != nil {
		v.lastUsed.giveBack(batch)
		return fmt.Errorf("bearer: writing last use of %d API tokens: %w", len(batch), err)
	}
	return nil
}
