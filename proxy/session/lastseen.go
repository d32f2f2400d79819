package session

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// TouchInterval is how stale a session's stored LastSeen may get: the Gate
// reports a session to LastSeen once it is older than this, and LastSeen
// writes each session at most once per interval (SS5). A short idle TTL
// shortens it: see TouchIntervalFor.
const TouchInterval = time.Minute

// TouchIntervalFor is the touch interval for an idle TTL: TouchInterval, or
// a quarter of the idle TTL when that is shorter, so that an active session
// is never idle in the store (stale by at most the touch interval plus one
// flush, under half the idle TTL).
func TouchIntervalFor(idle time.Duration) time.Duration {
	if idle <= 0 || idle/4 >= TouchInterval {
		return TouchInterval
	}
	return idle / 4
}

// DefaultFlushInterval is how often LastSeen.Run writes when Interval is zero.
const DefaultFlushInterval = 15 * time.Second

// LastSeen batches session last-seen times in memory and writes them with
// one TouchSessions call per flush, so the request path never writes.
// The zero value plus a Store is ready to use; it is safe for concurrent use.
type LastSeen struct {
	Store SessionToucher
	// TouchEvery is the touch interval, default TouchInterval; set it from
	// the idle TTL with TouchIntervalFor (proxy.New does when it is zero).
	TouchEvery time.Duration
	// Interval is the flush period, default DefaultFlushInterval or half of
	// TouchEvery when that is shorter.
	Interval time.Duration
	Clock    func() time.Time // default time.Now; same clock as the proxy
	Logger   *slog.Logger     // default slog.Default()

	shards [16]lastSeenShard
}

type lastSeenShard struct {
	mu      sync.Mutex
	pending map[storage.Hash]time.Time // to write at the next flush
	written map[storage.Hash]time.Time // written within TouchInterval
}

// Seen records that the session was used at at. It does not block on the
// store: the time is kept until the next flush, and dropped when the session
// was written less than TouchInterval before at.
func (l *LastSeen) Seen(idHash storage.Hash, at time.Time) {
	s := &l.shards[idHash[0]%uint8(len(l.shards))]
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.written[idHash]; ok && at.Sub(w) < l.touchEvery() {
		return
	}
	if s.pending == nil {
		s.pending = make(map[storage.Hash]time.Time)
	}
	if prev, ok := s.pending[idHash]; !ok || at.After(prev) {
		s.pending[idHash] = at
	}
}

// Flush writes the pending times now. On failure they stay pending for the
// next flush.
func (l *LastSeen) Flush(ctx context.Context) error {
	now := l.now()
	touchEvery := l.touchEvery()
	batch := make(map[storage.Hash]time.Time)
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		for h, w := range s.written {
			if now.Sub(w) >= touchEvery {
				delete(s.written, h)
			}
		}
		for h, at := range s.pending {
			batch[h] = at
			if s.written == nil {
				s.written = make(map[storage.Hash]time.Time)
			}
			s.written[h] = at
		}
		clear(s.pending)
		s.mu.Unlock()
	}
	if len(batch) == 0 {
		return nil
	}
	if err := l.Store.TouchSessions(ctx, batch); err != nil {
		l.giveBack(batch)
		return fmt.Errorf("session: writing last-seen of %d sessions: %w", len(batch), err)
	}
	return nil
}

func (l *LastSeen) giveBack(batch map[storage.Hash]time.Time) {
	for h, at := range batch {
		s := &l.shards[h[0]%uint8(len(l.shards))]
		s.mu.Lock()
		if w, ok := s.written[h]; ok && w.Equal(at) {
			delete(s.written, h)
		}
		if s.pending == nil {
			s.pending = make(map[storage.Hash]time.Time)
		}
		if prev, ok := s.pending[h]; !ok || at.After(prev) {
			s.pending[h] = at
		}
		s.mu.Unlock()
	}
}

// Run flushes every Interval until ctx ends, then flushes once more (with
// up to five seconds to finish) so that shutdown loses nothing. Failed
// periodic flushes are logged and retried; Run returns the final flush's
// error.
func (l *LastSeen) Run(ctx context.Context) error {
	interval := l.Interval
	if interval <= 0 {
		interval = min(DefaultFlushInterval, l.touchEvery()/2)
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			if err := l.Flush(ctx); err != nil {
				l.logger().LogAttrs(ctx, slog.LevelWarn, "last-seen flush failed", slog.String("error", err.Error()))
			}
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			return l.Flush(final)
		}
	}
}

func (l *LastSeen) touchEvery() time.Duration {
	if l.TouchEvery > 0 {
		return l.TouchEvery
	}
	return TouchInterval
}

func (l *LastSeen) now() time.Time {
	if l.Clock != nil {
		return l.Clock()
	}
	return time.Now()
}

func (l *LastSeen) logger() *slog.Logger { return cmp.Or(l.Logger, slog.Default()) }
