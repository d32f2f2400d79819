package bolt

import (
	"context"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
)

// tokenKind is one kind of mailed token (a reset, an invitation): its
// record bucket, its per-user index, the kind of mail job that mints it and
// the check of the user a valid token may act for. Both kinds use the reset
// token encoding, in buckets of their own, so that one kind is never found
// where the other is looked up (AD2).
type tokenKind struct {
	what           string // names the token in errors
	tokens, byUser []byte
	mailKind       string
	// user returns the user of a token of this kind, or storage.ErrNotFound
	// if the token no longer stands for them.
	user func(tx *bbolt.Tx, userID string) (storage.User, error)
}

var (
	resetKind = tokenKind{what: "reset token", tokens: bucketResetTokens, byUser: bucketUserTokens,
		mailKind: storage.MailKindPasswordReset, user: enabledUser}
	inviteKind = tokenKind{what: "token", tokens: bucketInviteTokens, byUser: bucketUserInvites,
		mailKind: storage.MailKindInvite, user: invitedUser}
)

// enabledUser is the user a reset token may act for: one not disabled (a
// token issued before the disable is void, as SetUserDisabled voids it).
func enabledUser(tx *bbolt.Tx, userID string) (storage.User, error) {
	u, err := getUser(tx, userID)
	if err != nil {
		return storage.User{}, err
	}
	if u.Disabled {
		return storage.User{}, notFound("reset token")
	}
	return u, nil
}

// queueTokenMail voids every token of kind k of u and queues the job that
// mints a new one at delivery, due at now. The job holds no token.
func queueTokenMail(tx *bbolt.Tx, k tokenKind, u storage.User, now time.Time) error {
	if err := voidTokens(tx, k, u.ID); err != nil {
		return err
	}
	_, err := enqueueMail(tx, storage.Mail{
		Kind: k.mailKind, UserID: u.ID, To: u.Email, CreatedAt: now, NextAttempt: now,
	})
	return err
}

// issueToken stores t as a token of kind k and voids every other token of
// kind k of t.UserID. A user the token could not act for (unknown; k.user
// refuses: disabled, or an invitation to a user with a password) is
// storage.ErrNotFound and nothing is written: a job queued before a disable
// mints nothing after it.
func issueToken(tx *bbolt.Tx, k tokenKind, t storage.ResetToken) error {
	if _, err := k.user(tx, t.UserID); err != nil {
		return err
	}
	if err := voidTokens(tx, k, t.UserID); err != nil {
		return err
	}
	if err := deleteToken(tx, k, t.Hash); err != nil { // keeps the index exact
		return err
	}
	if err := tx.Bucket(k.tokens).Put(t.Hash[:], encodeResetToken(t)); err != nil {
		return err
	}
	return tx.Bucket(k.byUser).Put(userHashKey(t.UserID, t.Hash), nil)
}

// tokenUser returns the user of the token of kind k stored under h if it
// has not expired at now and k.user accepts its user; otherwise
// storage.ErrNotFound.
func tokenUser(tx *bbolt.Tx, k tokenKind, h storage.Hash, now time.Time) (storage.User, error) {
	v := tx.Bucket(k.tokens).Get(h[:])
	if v == nil {
		return storage.User{}, notFound(k.what)
	}
	t, err := decodeResetToken(h, v)
	if err != nil {
		return storage.User{}, err
	}
	if !now.Before(t.ExpiresAt) {
		return storage.User{}, notFound(k.what)
	}
	return k.user(tx, t.UserID)
}

// voidTokens deletes every token of kind k of the user and its index entry.
func voidTokens(tx *bbolt.Tx, k tokenKind, userID string) error {
	index := tx.Bucket(k.byUser)
	tokens := tx.Bucket(k.tokens)
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

// deleteToken deletes the token of kind k under h and its index entry.
func deleteToken(tx *bbolt.Tx, k tokenKind, h storage.Hash) error {
	tokens := tx.Bucket(k.tokens)
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
	return tx.Bucket(k.byUser).Delete(userHashKey(t.UserID, h))
}

// sweepTokens deletes the tokens of kind k whose ExpiresAt is not after
// now, with their index entries, and reports how many. It deletes in
// chunks; see sweepChunk.
func (s *Store) sweepTokens(ctx context.Context, k tokenKind, now time.Time) (int, error) {
	expired := func(key, v []byte) bool {
		var h storage.Hash
		copy(h[:], key)
		t, err := decodeResetToken(h, v)
		return err == nil && !now.Before(t.ExpiresAt)
	}
	return s.sweepScan(ctx, k.tokens, expired, func(tx *bbolt.Tx, key []byte) error {
		var h storage.Hash
		copy(h[:], key)
		return deleteToken(tx, k, h)
	})
}
