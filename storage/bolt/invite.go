package bolt

import (
	"context"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
)

// QueueInviteMail, in one transaction, voids every invite token of the user
// and queues an invitation job (storage.MailKindInvite) due at now. The job
// holds no token: the mail queue mints one at delivery (IssueInviteToken).
func (s *Store) QueueInviteMail(ctx context.Context, userID string, now time.Time) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		u, err := getUser(tx, userID)
		if err != nil {
			return err
		}
		return queueTokenMail(tx, inviteKind, u, now)
	})
}

// IssueInviteToken, in one transaction, stores t and voids every other
// invite token of t.UserID. An unknown user is storage.ErrNotFound.
func (s *Store) IssueInviteToken(ctx context.Context, t storage.ResetToken) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		return issueToken(tx, inviteKind, t)
	})
}

// InviteTokenUser returns the user of a valid invite token (known, unused,
// not expired at now, its user still without a password) without consuming
// it; otherwise storage.ErrNotFound.
func (s *Store) InviteTokenUser(ctx context.Context, tokenHash storage.Hash, now time.Time) (storage.User, error) {
	var u storage.User
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		u, err = tokenUser(tx, inviteKind, tokenHash, now)
		return err
	})
	return u, err
}

// invitedUser returns the user of an invite token while the invitation
// still stands: an account that has a password (set by the operator or a
// reset meanwhile) is no longer waiting for its first one, and a disabled
// one may not get one; either way the invitation is void (AD2).
func invitedUser(tx *bbolt.Tx, userID string) (storage.User, error) {
	u, err := getUser(tx, userID)
	if err != nil {
		return storage.User{}, err
	}
	if u.PasswordHash != "" || u.Disabled {
		return storage.User{}, notFound("token")
	}
	return u, nil
}

// CompleteInvite, in one transaction: checks the invite token and that the
// user still has no password (storage.ErrNotFound, nothing written), consumes it with every other invite
// token of the user and sets the password hash. It returns the updated user.
func (s *Store) CompleteInvite(ctx context.Context, tokenHash storage.Hash, now time.Time, passwordHash string) (storage.User, error) {
	var u storage.User
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		var err error
		if u, err = tokenUser(tx, inviteKind, tokenHash, now); err != nil {
			return err
		}
		u.PasswordHash = passwordHash
		if err := tx.Bucket(bucketUsers).Put([]byte(u.ID), encodeUser(u)); err != nil {
			return err
		}
		return voidTokens(tx, inviteKind, u.ID)
	})
	if err != nil {
		return storage.User{}, err
	}
	return u, nil
}

// DeleteExpiredInviteTokens deletes invite tokens whose ExpiresAt is not
// after now, with their index entries, and reports how many. It deletes in
// chunks; see sweepChunk.
func (s *Store) DeleteExpiredInviteTokens(ctx context.Context, now time.Time) (int, error) {
	return s.sweepTokens(ctx, inviteKind, now)
}
