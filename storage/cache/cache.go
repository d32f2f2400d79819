// Package cache is a per-replica session cache: a decorator over a
// storage.Store that answers Session (and APITokenByHash, see apitokens.go)
// from memory, so that the per-request check does not pay a database round
// trip, while revocations made by any replica still take effect everywhere
// within a second.
//
// Dependencies: cache imports storage only. It does not know the backend;
// something that hears the backend's revocations (storage/postgres's Listen)
// calls its methods InvalidateSession, InvalidateAPIToken, InvalidateUser,
// Resync, Down and Heartbeat.
//
// The cache is trusted only while it is live: after Resync (the
// notification connection is listening and the cache was flushed) and with
// a Heartbeat sent no longer than Options.HeartbeatTimeout ago. Otherwise every
// Session call reads the store, so a replica that cannot be sure it hears
// the others never serves a revoked session from memory. Revocations made
// through this decorator are applied to the local cache at once, so they
// take effect on this replica's next request whether it is live or not.
package cache

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// Defaults of Options.
const (
	DefaultMaxEntries       = 100_000
	DefaultMaxAge           = 30 * time.Second
	DefaultHeartbeatTimeout = time.Second
)

// Options tune New.
type Options struct {
	// MaxEntries bounds the cache; a full cache drops an arbitrary entry.
	MaxEntries int
	// MaxAge bounds how long an entry is served before it is read again.
	MaxAge time.Duration
	// HeartbeatTimeout: with no Heartbeat for this long, the cache is bypassed.
	HeartbeatTimeout time.Duration
	// Now is the clock (default time.Now); only its monotonic differences matter.
	Now func() time.Time
}

// Store is a storage.Store whose Session reads are cached. Every other
// method passes through to the wrapped store; those that revoke sessions
// also drop them from this cache.
type Store struct {
	storage.Store
	opts Options

	mu      sync.RWMutex
	entries map[storage.Hash]entry
	byUser  map[string]map[storage.Hash]struct{}
	// tokens and tokensByUser are the API tokens, beside the sessions.
	tokens       map[storage.Hash]tokenEntry
	tokensByUser map[string]map[storage.Hash]struct{}
	// gen grows with every invalidation; a read fills the cache only if no
	// invalidation happened while it read the store.
	gen uint64

	live     atomic.Bool
	lastBeat atomic.Int64 // UnixNano() of the sending of the last Heartbeat
	hits     atomic.Uint64
	misses   atomic.Uint64
	bypassed atomic.Uint64

	tokenHits, tokenMisses, tokenBypassed atomic.Uint64
}

type entry struct {
	session storage.Session
	fetched time.Time
}

// New wraps inner. The cache starts not live: it serves nothing from memory
// until Resync and a Heartbeat.
func New(inner storage.Store, opts Options) *Store {
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultMaxEntries
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = DefaultMaxAge
	}
	if opts.HeartbeatTimeout <= 0 {
		opts.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{
		Store:        inner,
		opts:         opts,
		entries:      map[storage.Hash]entry{},
		byUser:       map[string]map[storage.Hash]struct{}{},
		tokens:       map[storage.Hash]tokenEntry{},
		tokensByUser: map[string]map[storage.Hash]struct{}{},
	}
}

// Unwrap returns the wrapped store.
func (s *Store) Unwrap() storage.Store { return s.Store }

// Live reports whether the cache may answer from memory now: it was
// resynchronized since the last Down and has a recent heartbeat.
func (s *Store) Live() bool { return s.liveAt(s.opts.Now()) }

func (s *Store) liveAt(now time.Time) bool {
	if !s.live.Load() {
		return false
	}
	last := s.lastBeat.Load()
	return last != 0 && now.UnixNano()-last <= int64(s.opts.HeartbeatTimeout)
}

// Session answers from memory when the cache is live and holds a fresh
// entry; otherwise it reads the store and, when live, keeps the answer.
// A missing session is never cached.
func (s *Store) Session(ctx context.Context, idHash storage.Hash) (storage.Session, error) {
	now := s.opts.Now()
	live := s.liveAt(now)
	s.mu.RLock()
	e, ok := s.entries[idHash]
	gen := s.gen
	s.mu.RUnlock()
	if live && ok && now.Sub(e.fetched) < s.opts.MaxAge {
		s.hits.Add(1)
		return e.session, nil
	}
	if !live {
		s.bypassed.Add(1)
	} else {
		s.misses.Add(1)
	}
	sess, err := s.Store.Session(ctx, idHash)
	if err != nil || !live {
		return sess, err
	}
	s.mu.Lock()
	if s.gen == gen && s.live.Load() {
		s.put(idHash, entry{session: sess, fetched: now})
	}
	s.mu.Unlock()
	return sess, nil
}

// put stores e under h; the caller holds mu.
func (s *Store) put(h storage.Hash, e entry) {
	if _, ok := s.entries[h]; !ok && len(s.entries) >= s.opts.MaxEntries {
		for victim := range s.entries { // an arbitrary entry
			s.drop(victim)
			break
		}
	}
	s.entries[h] = e
	set := s.byUser[e.session.UserID]
	if set == nil {
		set = map[storage.Hash]struct{}{}
		s.byUser[e.session.UserID] = set
	}
	set[h] = struct{}{}
}

// drop removes the entry under h; the caller holds mu.
func (s *Store) drop(h storage.Hash) {
	e, ok := s.entries[h]
	if !ok {
		return
	}
	delete(s.entries, h)
	if set := s.byUser[e.session.UserID]; set != nil {
		delete(set, h)
		if len(set) == 0 {
			delete(s.byUser, e.session.UserID)
		}
	}
}

// InvalidateSession forgets one session (it was deleted or changed).
func (s *Store) InvalidateSession(h storage.Hash) {
	s.mu.Lock()
	s.gen++
	s.drop(h)
	s.mu.Unlock()
}

// InvalidateUser forgets every session and API token of the user.
func (s *Store) InvalidateUser(userID string) {
	s.mu.Lock()
	s.gen++
	for h := range s.byUser[userID] {
		delete(s.entries, h)
	}
	delete(s.byUser, userID)
	s.dropUserTokens(userID)
	s.mu.Unlock()
}

// flush forgets everything.
func (s *Store) flush() {
	s.mu.Lock()
	s.gen++
	clear(s.entries)
	clear(s.byUser)
	clear(s.tokens)
	clear(s.tokensByUser)
	s.mu.Unlock()
}

// Down marks the cache not live: the notification connection is lost, so
// changes may go unheard. Session reads the store until the next Resync.
func (s *Store) Down() {
	s.live.Store(false)
	s.flush()
}

// Resync is called once the notification connection listens again: what
// happened meanwhile is unknown, so the cache is flushed, then trusted
// again once a Heartbeat comes back on the new connection.
func (s *Store) Resync() {
	s.lastBeat.Store(0) // the new connection must prove itself
	s.flush()
	s.live.Store(true)
}

// Heartbeat records that a notification this replica sent through the
// database at sent came back on the notification connection. Notifications
// arrive in commit order and are handled one by one, so every revocation
// committed before sent has been applied: the cache is as fresh as sent, not
// as the moment the heartbeat was read. A listener that falls behind its
// notifications therefore stops the cache once it lags by more than
// HeartbeatTimeout (PG1).
func (s *Store) Heartbeat(sent time.Time) { s.lastBeat.Store(sent.UnixNano()) }

// Stats are counters of Session calls since New, and of APITokenByHash calls.
type Stats struct {
	Hits, Misses, Bypassed uint64 // from memory; read and kept; read while not live
	Entries                int

	TokenHits, TokenMisses, TokenBypassed uint64
	TokenEntries                          int
}

// Stats returns the counters.
func (s *Store) Stats() Stats {
	s.mu.RLock()
	n, tokens := len(s.entries), len(s.tokens)
	s.mu.RUnlock()
	return Stats{Hits: s.hits.Load(), Misses: s.misses.Load(), Bypassed: s.bypassed.Load(), Entries: n,
		TokenHits: s.tokenHits.Load(), TokenMisses: s.tokenMisses.Load(), TokenBypassed: s.tokenBypassed.Load(), TokenEntries: tokens}
}
