package session

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// fakeStore is an in-memory SessionSource and SessionToucher.
type fakeStore struct {
	mu       sync.Mutex
	sessions map[storage.Hash]storage.Session
	err      error
	reads    atomic.Int64
	touches  []map[storage.Hash]time.Time
}

func newFakeStore() *fakeStore {
	return &fakeStore{sessions: make(map[storage.Hash]storage.Session)}
}

func (f *fakeStore) Session(_ context.Context, idHash storage.Hash) (storage.Session, error) {
	f.reads.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return storage.Session{}, f.err
	}
	s, ok := f.sessions[idHash]
	if !ok {
		return storage.Session{}, fmt.Errorf("fake: %w", storage.ErrNotFound)
	}
	return s, nil
}

func (f *fakeStore) TouchSessions(_ context.Context, lastSeen map[storage.Hash]time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	batch := make(map[storage.Hash]time.Time, len(lastSeen))
	for h, at := range lastSeen {
		batch[h] = at
		if s, ok := f.sessions[h]; ok {
			s.LastSeen = at
			f.sessions[h] = s
		}
	}
	f.touches = append(f.touches, batch)
	return nil
}

func (f *fakeStore) put(id string, s storage.Session) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s.IDHash = storage.HashSecret(id)
	f.sessions[s.IDHash] = s
}

func (f *fakeStore) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *fakeStore) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sessions)
}

// writesFor counts the TouchSessions batches that carried the session.
func (f *fakeStore) writesFor(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, batch := range f.touches {
		if _, ok := batch[storage.HashSecret(id)]; ok {
			n++
		}
	}
	return n
}

func (f *fakeStore) touchCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.touches)
}

var epoch = time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)

const (
	cookieName = "gatehouse_session"
	sessionID  = "s3ss10n-1d-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
)
