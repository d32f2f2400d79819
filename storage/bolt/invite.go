package bolt

import (
	"context"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
)

// tokenBuckets names the record bucket and the per-user index of one token
// kind. Invite tokens use the reset token encoding in buckets of their own,
// so that one kind is never found where the other is looked up.
type tokenBuckets struct{ tokens, byUser []byte }

var inviteBuckets = tokenBuckets{tokens: bucketInviteTokens, byUser: bucketUserInvites}

// QueueInviteMail, in one transaction, voids every invite token of the user
// and queues an invitation job (storage.MailKindInvite) due at now. The job
// holds no token: the mail queue mints one at delivery (IssueInviteToken).
func (s *Store) QueueInviteMail(ctx context.Context, userID string, now time.Time) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		u, err := getUser(tx, userID)
		if err != nil {
			return err
		}
		if err := voidTokens(tx, inviteBuckets, u.ID); err != nil {
			return err
		}
		_, err = enqueueMail(tx, storage.Mail{
			Kind: storage.MailKindInvite, UserID: u.ID, To: u.Email, CreatedAt: now, NextAttempt: now,
		})
		return err
	})
}

// IssueInviteToken, in one transaction, stores t and voids every other
// invite token of t.UserID. An unknown user is storage.ErrNotFound.
func (s *Store) IssueInviteToken(ctx context.Context, t storage.ResetToken) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		if _, err := getUser(tx, t.UserID); err != nil {
			return err
		}
		if err := voidTokens(tx, inviteBuckets, t.UserID); err != nil {
			return err
		}
		if err := tx.Bucket(bucketInviteTokens).Put(t.Hash[:], encodeResetToken(t)); err != nil {
			return err
		}
		return tx.Bucket(bucketUserInvites).Put(userHashKey(t.UserID, t.Hash), nil)
	})
}

// InviteTokenUser returns the user of a valid invite token (known, unused,
// not expired at now, its user still without a password) without consuming
// it; otherwise storage.ErrNotFound.
func (s *Store) InviteTokenUser(ctx context.Context, tokenHash storage.Hash, now time.Time) (storage.User, error) {
	var u storage.User
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		t, err := validToken(tx, inviteBuckets, tokenHash, now)
		if err != nil {
			return err
		}
		u, err = invitedUser(tx, t.UserID)
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
		t, err := validToken(tx, inviteBuckets, tokenHash, now)
		if err != nil {
			return err
		}
		if u, err = invitedUser(tx, t.UserID); err != nil {
			return err
		}
		u.PasswordHash = passwordHash
		if err := tx.Bucket(bucketUsers).Put([]byte(u.ID), encodeUser(u)); err != nil {
			return err
		}
		return voidTokens(tx, inviteBuckets, u.ID)
	})
	if err != nil {
		return storage.User{}, err
	}
	return u, nil
}

// validToken returns the token of kind b stored under h if it has not expired at now.
func validToken(tx *bbolt.Tx, b tokenBuckets, h storage.Hash, now time.Time) (storage.ResetToken, error) {
	v := tx.Bucket(b.tokens).Get(h[:])
	if v == nil {
		return storage.ResetToken{}, notFound("token")
	}
	t, err := decodeResetToken(h, v)
	if err != nil {
		return storage.ResetToken{}, err
	}
	if !now.Before(t.ExpiresAt) {
		return storage.ResetToken{}, notFound("token")
	}
	return t, nil
}

// voidTokens deletes every token of kind b of the user and its index entry.
func voidTokens(tx *bbolt.Tx, b tokenBuckets, userID string) error {
	index := tx.Bucket(b.byUser)
	tokens := tx.Bucket(b.tokens)
	for _, h := range hashKeysWithPrefix(index, userPrefix(userID)) {
		if err := tokens.Delete(h[:]); err != nil {
			return err
		}
		if err := index.Delete(userHashKey(userID, h)); err != nil {
			return err
		}
	}
	return nil
}

// DeleteExpiredInviteTokens deletes invite tokens whose ExpiresAt is not
// after now, with their index entries, and reports how many. It deletes in
// chunks; see sweepChunk.
func (s *Store) DeleteExpiredInviteTokens(ctx context.Context, now time.Time) (int, error) {
	expired := func(k, v []byte) bool {
		var h storage.Hash
		copy(h[:], k)
		t, err := decodeResetToken(h, v)
		return err == nil && !now.Before(t.ExpiresAt)
	}
	return s.sweepScan(ctx, bucketInviteTokens, expired, func(tx *bbolt.Tx, k []byte) error {
		var h storage.Hash
		copy(h[:], k)
		tokens := tx.Bucket(bucketInviteTokens)
		v := tokens.Get(h[:])
		if v == nil {
			return nil
		}
		t, err := decodeResetToken(h, v)
		if err != nil {
			return err
		}
		if err := tokens.Delete(h[:]); err != nil {
			return err
		}
		if !validUserID(t.UserID) {
			return nil
		}
		return tx.Bucket(bucketUserInvites).Delete(userHashKey(t.UserID, h))
	})
}
