package cache

import (
	"context"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// The methods below revoke or change sessions: each passes through and then
// drops what it changed from this replica's cache, so the change holds on
// this replica's next request even before the notification comes back.

// CreateSession stores the session and forgets any cached one of that hash.
func (s *Store) CreateSession(ctx context.Context, sess storage.Session) error {
	err := s.Store.CreateSession(ctx, sess)
	s.InvalidateSession(sess.IDHash)
	return err
}

// DeleteSession deletes the session and forgets it.
func (s *Store) DeleteSession(ctx context.Context, idHash storage.Hash) error {
	err := s.Store.DeleteSession(ctx, idHash)
	s.InvalidateSession(idHash)
	return err
}

// DeleteUserSessions deletes the user's sessions and forgets them.
func (s *Store) DeleteUserSessions(ctx context.Context, userID string) (int, error) {
	n, err := s.Store.DeleteUserSessions(ctx, userID)
	s.InvalidateUser(userID)
	return n, err
}

// DeleteOtherSessions signs the user out elsewhere and forgets the user's
// sessions (the kept one is read again, at its new epoch).
func (s *Store) DeleteOtherSessions(ctx context.Context, userID string, keep storage.Hash) (int, error) {
	n, err := s.Store.DeleteOtherSessions(ctx, userID, keep)
	s.InvalidateUser(userID)
	return n, err
}

// CompleteReset completes the reset and forgets the user's sessions.
func (s *Store) CompleteReset(ctx context.Context, tokenHash storage.Hash, now time.Time,
	passwordHash string, notice storage.Mail) (storage.User, int, error) {
	u, n, err := s.Store.CompleteReset(ctx, tokenHash, now, passwordHash, notice)
	if err == nil {
		s.InvalidateUser(u.ID)
	}
	return u, n, err
}

// SetPasswordHash replaces the password and forgets the user's sessions.
func (s *Store) SetPasswordHash(ctx context.Context, userID, hash string) (int, error) {
	n, err := s.Store.SetPasswordHash(ctx, userID, hash)
	s.InvalidateUser(userID)
	return n, err
}

// ChangePassword changes the password and forgets the user's sessions.
func (s *Store) ChangePassword(ctx context.Context, userID string, epoch uint64, hash string) (storage.User, int, error) {
	u, n, err := s.Store.ChangePassword(ctx, userID, epoch, hash)
	s.InvalidateUser(userID)
	return u, n, err
}

// TouchSessions passes through and moves LastSeen of cached entries, so
// that the idle check on this replica sees its own touches.
func (s *Store) TouchSessions(ctx context.Context, lastSeen map[storage.Hash]time.Time) error {
	if err := s.Store.TouchSessions(ctx, lastSeen); err != nil {
		return err
	}
	s.mu.Lock()
	for h, t := range lastSeen {
		if e, ok := s.entries[h]; ok && t.After(e.session.LastSeen) {
			e.session.LastSeen = t
			s.entries[h] = e
		}
	}
	s.mu.Unlock()
	return nil
}

// DeleteExpiredSessions sweeps the store and forgets the cached sessions
// the same rule deletes. Other replicas need no notification: a session
// the sweep deletes is one that Session.Active refuses on every replica
// (their cached LastSeen is never later than the stored one).
func (s *Store) DeleteExpiredSessions(ctx context.Context, now time.Time, idle time.Duration) (int, error) {
	n, err := s.Store.DeleteExpiredSessions(ctx, now, idle)
	s.mu.Lock()
	for h, e := range s.entries {
		if !e.session.Active(now, idle) {
			s.drop(h)
		}
	}
	s.mu.Unlock()
	return n, err
}

// SetUserDisabled passes through and forgets the user's sessions and API
// tokens (cached with the owner's state).
func (s *Store) SetUserDisabled(ctx context.Context, userID string, disabled bool) (int, error) {
	n, err := s.Store.SetUserDisabled(ctx, userID, disabled)
	s.InvalidateUser(userID)
	return n, err
}

// DeleteUser passes through and forgets the user's sessions and API tokens.
func (s *Store) DeleteUser(ctx context.Context, userID string) error {
	err := s.Store.DeleteUser(ctx, userID)
	s.InvalidateUser(userID)
	return err
}

// RefreshSession changes the session's groups and forgets it, so that
// this replica reads the new groups on its next request.
func (s *Store) RefreshSession(ctx context.Context, session storage.Hash, groups string, tokens []byte, next time.Time) error {
	err := s.Store.RefreshSession(ctx, session, groups, tokens, next)
	s.InvalidateSession(session)
	return err
}

// EndGrantSessions ends the provider's sessions and forgets them.
func (s *Store) EndGrantSessions(ctx context.Context, provider, subject, sid string) ([]storage.Grant, error) {
	grants, err := s.Store.EndGrantSessions(ctx, provider, subject, sid)
	for _, g := range grants {
		s.InvalidateSession(g.Session)
	}
	return grants, err
}
