package cache

import (
	"context"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// API tokens are cached like sessions, under the same rules: answered from
// memory only while the cache is live and the entry younger than MaxAge,
// dropped by InvalidateAPIToken (a revocation anywhere), InvalidateUser (the
// owner disabled, enabled or deleted anywhere), Down and Resync. A token
// unknown to the store is never cached, so random tokens cannot fill it.

type tokenEntry struct {
	token   storage.APIToken
	owner   storage.APITokenOwner
	fetched time.Time
}

// APITokenByHash answers from memory when the cache is live and holds a
// fresh entry; otherwise it reads the store and, when live, keeps the
// answer.
func (s *Store) APITokenByHash(ctx context.Context, h storage.Hash) (storage.APIToken, storage.APITokenOwner, error) {
	now := s.opts.Now()
	live := s.liveAt(now)
	s.mu.RLock()
	e, ok := s.tokens[h]
	gen := s.gen
	s.mu.RUnlock()
	if live && ok && now.Sub(e.fetched) < s.opts.MaxAge {
		s.tokenHits.Add(1)
		return e.token, e.owner, nil
	}
	if !live {
		s.tokenBypassed.Add(1)
	} else {
		s.tokenMisses.Add(1)
	}
	t, owner, err := s.Store.APITokenByHash(ctx, h)
	if err != nil || !live {
		return t, owner, err
	}
	s.mu.Lock()
	if s.gen == gen && s.live.Load() {
		s.putToken(h, tokenEntry{token: t, owner: owner, fetched: now})
	}
	s.mu.Unlock()
	return t, owner, nil
}

// putToken stores e under h; the caller holds mu.
func (s *Store) putToken(h storage.Hash, e tokenEntry) {
	if _, ok := s.tokens[h]; !ok && len(s.tokens) >= s.opts.MaxEntries {
		for victim := range s.tokens { // an arbitrary entry
			s.dropToken(victim)
			break
		}
	}
	s.tokens[h] = e
	if e.token.UserID == "" {
		return
	}
	set := s.tokensByUser[e.token.UserID]
	if set == nil {
		set = map[storage.Hash]struct{}{}
		s.tokensByUser[e.token.UserID] = set
	}
	set[h] = struct{}{}
}

// dropToken removes the entry under h; the caller holds mu.
func (s *Store) dropToken(h storage.Hash) {
	e, ok := s.tokens[h]
	if !ok {
		return
	}
	delete(s.tokens, h)
	if set := s.tokensByUser[e.token.UserID]; set != nil {
		delete(set, h)
		if len(set) == 0 {
			delete(s.tokensByUser, e.token.UserID)
		}
	}
}

// dropUserTokens removes the entries of the user's tokens; the caller holds mu.
func (s *Store) dropUserTokens(userID string) {
	for h := range s.tokensByUser[userID] {
		delete(s.tokens, h)
	}
	delete(s.tokensByUser, userID)
}

// InvalidateAPIToken forgets one API token (it was revoked).
func (s *Store) InvalidateAPIToken(h storage.Hash) {
	s.mu.Lock()
	s.gen++
	s.dropToken(h)
	s.mu.Unlock()
}

// RevokeAPIToken revokes the token and forgets it.
func (s *Store) RevokeAPIToken(ctx context.Context, id string) (storage.APIToken, error) {
	t, err := s.Store.RevokeAPIToken(ctx, id)
	if err == nil {
		s.InvalidateAPIToken(t.Hash)
	}
	return t, err
}
