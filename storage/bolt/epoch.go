package bolt

import (
	"context"
	"fmt"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
)

// The credential epoch: every change that must end a user's sessions
// (reset, password change, revoke-sessions, disable) bumps User.Epoch in its
// own transaction, and CreateSession compares the session's Epoch with the
// user's in the transaction that writes the session. A sign-in that checked
// the old password before a reset completed therefore cannot leave a
// session behind: its CreateSession fails with storage.ErrCredentialsChanged.

// putUserBumped writes u with its Epoch one higher.
func putUserBumped(tx *bbolt.Tx, u storage.User) (storage.User, error) {
	u.Epoch++
	return u, tx.Bucket(bucketUsers).Put([]byte(u.ID), encodeUser(u))
}

// checkSessionUser fails with storage.ErrCredentialsChanged unless the
// session's user exists, is enabled and is still at the session's Epoch.
func checkSessionUser(tx *bbolt.Tx, sess storage.Session) error {
	u, err := getUser(tx, sess.UserID)
	if err != nil {
		return fmt.Errorf("storage/bolt: create session: user: %w (%w)", storage.ErrCredentialsChanged, err)
	}
	if u.Disabled {
		return fmt.Errorf("storage/bolt: create session: user disabled: %w", storage.ErrCredentialsChanged)
	}
	if u.Epoch != sess.Epoch {
		return fmt.Errorf("storage/bolt: create session: epoch %d, user at %d: %w", sess.Epoch, u.Epoch, storage.ErrCredentialsChanged)
	}
	return nil
}

// UpgradePasswordHash replaces the user's hash with newHash only if it is
// still oldHash; storage.ErrCredentialsChanged otherwise, storage.ErrNotFound
// for an unknown user. The Epoch stays: the password is the same one.
func (s *Store) UpgradePasswordHash(ctx context.Context, userID, oldHash, newHash string) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		u, err := getUser(tx, userID)
		if err != nil {
			return err
		}
		if u.PasswordHash != oldHash {
			return fmt.Errorf("storage/bolt: upgrade password hash: %w", storage.ErrCredentialsChanged)
		}
		u.PasswordHash = newHash
		return tx.Bucket(bucketUsers).Put([]byte(u.ID), encodeUser(u))
	})
}
