package bolt

import (
	"context"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
)

// QueueResetMail, in one transaction, voids every reset token of the user
// and queues a password reset job for them: Kind
// storage.MailKindPasswordReset, the user's id and stored address, due at
// now. The job holds no token; the mail queue mints one at delivery
// (IssueResetToken). An unknown user is storage.ErrNotFound and nothing is
// written.
func (s *Store) QueueResetMail(ctx context.Context, userID string, now time.Time) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		u, err := getUser(tx, userID)
		if err != nil {
			return err
		}
		return queueTokenMail(tx, resetKind, u, now)
	})
}

// QueueResetRequest, in one transaction, looks the normalized email up: for
// an account it voids the user's reset tokens and queues a reset job (as
// QueueResetMail) and returns the user; for an unknown address it
// overwrites the fixed-size marker in bucketResetRequests, so that the
// request costs one durable commit either way without growing the file,
// and returns storage.ErrNotFound. It runs through bbolt's Batch: concurrent
// requests share one commit and one fsync.
func (s *Store) QueueResetRequest(ctx context.Context, email string, now time.Time) (storage.User, error) {
	email = storage.NormalizeEmail(email)
	var u storage.User
	err := s.batch(ctx, func(tx *bbolt.Tx) error {
		u = storage.User{} // Batch may run fn again
		writeMarker := func() error {
			marker := make([]byte, timeKeySize)
			putSortableTime(marker, now)
			return tx.Bucket(bucketResetRequests).Put(unknownResetRequestKey, marker)
		}
		id := tx.Bucket(bucketUsersByEmail).Get([]byte(email))
		if id == nil {
			return writeMarker()
		}
		var err error
		if u, err = getUser(tx, string(id)); err != nil {
			return err
		}
		if u.Disabled { // mailed nothing, at the cost of an unknown address (AP2)
			u = storage.User{}
			return writeMarker()
		}
		return queueTokenMail(tx, resetKind, u, now)
	})
	if err != nil {
		return storage.User{}, err
	}
	if u.ID == "" {
		return storage.User{}, notFound("user by email")
	}
	return u, nil
}

// unknownResetRequestKey is the one record a reset request for an unknown
// address writes: the time of the last such request.
var unknownResetRequestKey = []byte("last_unknown")

// IssueResetToken, in one transaction, stores t and voids every other token
// of t.UserID. An unknown user is storage.ErrNotFound and nothing is written.
func (s *Store) IssueResetToken(ctx context.Context, t storage.ResetToken) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		return issueToken(tx, resetKind, t)
	})
}

// ResetTokenUser returns the user of a valid token (known, unused, not
// expired at now, its user not disabled) without consuming it; otherwise
// storage.ErrNotFound.
func (s *Store) ResetTokenUser(ctx context.Context, tokenHash storage.Hash, now time.Time) (storage.User, error) {
	var u storage.User
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		u, err = tokenUser(tx, resetKind, tokenHash, now)
		return err
	})
	return u, err
}

// CompleteReset, in one transaction: checks the token as ResetTokenUser does
// (storage.ErrNotFound, nothing written), consumes it, sets the password
// hash, voids every other token of the user, deletes every session of the
// user with their index entries and queues notice unless notice.To is empty
// (zero CreatedAt and NextAttempt become now). It returns the updated user
// and the number of sessions deleted; the user's Epoch is bumped. Of concurrent calls with one token,
// exactly one succeeds: bbolt runs write transactions one at a time.
func (s *Store) CompleteReset(ctx context.Context, tokenHash storage.Hash, now time.Time,
	passwordHash string, notice storage.Mail) (storage.User, int, error) {
	var (
		u        storage.User
		sessions int
	)
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		var err error
		if u, err = tokenUser(tx, resetKind, tokenHash, now); err != nil {
			return err
		}
		// Voids every reset token of the user, the used one included.
		if u, sessions, err = replacePassword(tx, u, passwordHash); err != nil {
			return err
		}
		if notice.To != "" {
			_, err = enqueueMail(tx, withTimes(notice, now))
		}
		return err
	})
	if err != nil {
		return storage.User{}, 0, err
	}
	return u, sessions, nil
}

// DeleteExpiredResetTokens deletes tokens whose ExpiresAt is not after now
// and reports how many. It deletes in chunks; see sweepChunk.
func (s *Store) DeleteExpiredResetTokens(ctx context.Context, now time.Time) (int, error) {
	return s.sweepTokens(ctx, resetKind, now)
}
