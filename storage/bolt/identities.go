package bolt

import (
	"bytes"
	"context"
	"fmt"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
)

// CreateUserWithIdentity creates u and links id to it (id.UserID is set to
// u.ID) in one transaction: storage.ErrEmailTaken or storage.ErrIdentityInUse
// and nothing is written.
func (s *Store) CreateUserWithIdentity(ctx context.Context, u storage.User, id storage.Identity) error {
	id.UserID = u.ID
	return s.update(ctx, func(tx *bbolt.Tx) error {
		if err := checkIdentity(id); err != nil {
			return err
		}
		if tx.Bucket(bucketIdentities).Get(identityKey(id.Provider, id.Subject)) != nil {
			return fmt.Errorf("storage/bolt: create user: %w", storage.ErrIdentityInUse)
		}
		if err := insertUser(tx, u); err != nil {
			return err
		}
		return putIdentity(tx, id)
	})
}

// UserByIdentity returns the user linked to the provider account,
// storage.ErrNotFound if there is none.
func (s *Store) UserByIdentity(ctx context.Context, provider, subject string) (storage.User, error) {
	var u storage.User
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketIdentities).Get(identityKey(provider, subject))
		if v == nil || !validProvider(provider) {
			return notFound("identity")
		}
		id, err := decodeIdentity(v)
		if err != nil {
			return err
		}
		u, err = getUser(tx, id.UserID)
		return err
	})
	return u, err
}

// IdentitiesOfUser returns the user's identities sorted by provider; none
// (and no error) for a user without identities or an unknown user.
func (s *Store) IdentitiesOfUser(ctx context.Context, userID string) ([]storage.Identity, error) {
	var ids []storage.Identity
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		if !validUserID(userID) {
			return nil
		}
		identities := tx.Bucket(bucketIdentities)
		prefix := userPrefix(userID)
		c := tx.Bucket(bucketUserIdentities).Cursor()
		for k, subject := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, subject = c.Next() {
			v := identities.Get(identityKey(string(k[len(prefix):]), string(subject)))
			if v == nil {
				return fmt.Errorf("storage/bolt: identity index of user %q: %w", userID, errCorrupt)
			}
			id, err := decodeIdentity(v)
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	})
	return ids, err
}

// LinkIdentity attaches id to the user id.UserID for the session whose hash
// is session: only while that session exists, is the user's, and the user
// is enabled and at the session's Epoch (storage.ErrCredentialsChanged
// otherwise). Already linked to that user: nil and nothing changes. Linked
// to another user: storage.ErrIdentityInUse. A user holds at most one
// identity per provider: linking a second account of the same provider also
// fails with storage.ErrIdentityInUse and keeps the first.
func (s *Store) LinkIdentity(ctx context.Context, id storage.Identity, session storage.Hash) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		if err := checkIdentity(id); err != nil {
			return err
		}
		if _, err := getUser(tx, id.UserID); err != nil {
			return err
		}
		if err := checkLinkingSession(tx, id.UserID, session); err != nil {
			return err
		}
		if v := tx.Bucket(bucketIdentities).Get(identityKey(id.Provider, id.Subject)); v != nil {
			linked, err := decodeIdentity(v)
			if err != nil {
				return err
			}
			if linked.UserID == id.UserID {
				return errNoWrite
			}
			return fmt.Errorf("storage/bolt: link identity: %w", storage.ErrIdentityInUse)
		}
		if tx.Bucket(bucketUserIdentities).Get(append(userPrefix(id.UserID), id.Provider...)) != nil {
			return fmt.Errorf("storage/bolt: link identity: user already has a %s identity: %w",
				id.Provider, storage.ErrIdentityInUse)
		}
		return putIdentity(tx, id)
	})
}

// checkLinkingSession fails with storage.ErrCredentialsChanged unless the
// session under h exists, belongs to userID, and its user is enabled and
// at the session's Epoch (checkSessionUser).
func checkLinkingSession(tx *bbolt.Tx, userID string, h storage.Hash) error {
	v := tx.Bucket(bucketSessions).Get(h[:])
	if v == nil {
		return fmt.Errorf("storage/bolt: link identity: the session has ended: %w", storage.ErrCredentialsChanged)
	}
	sess, err := decodeSession(h, v)
	if err != nil {
		return err
	}
	if sess.UserID != userID {
		return fmt.Errorf("storage/bolt: link identity: the session is another user's: %w", storage.ErrCredentialsChanged)
	}
	return checkSessionUser(tx, sess)
}

// UnlinkIdentity detaches the user's identity of provider:
// storage.ErrNotLinked if there is none, storage.ErrLastLoginMethod when the
// user has no password and no other identity.
func (s *Store) UnlinkIdentity(ctx context.Context, userID, provider string) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		if !validUserID(userID) || !validProvider(provider) {
			return fmt.Errorf("storage/bolt: unlink identity: %w", storage.ErrNotLinked)
		}
		index := tx.Bucket(bucketUserIdentities)
		prefix := userPrefix(userID)
		indexKey := append(prefix[:len(prefix):len(prefix)], provider...)
		subject := index.Get(indexKey)
		if subject == nil {
			return fmt.Errorf("storage/bolt: unlink identity: %w", storage.ErrNotLinked)
		}
		u, err := getUser(tx, userID)
		if err != nil {
			return err
		}
		if u.PasswordHash == "" && !hasOtherIdentity(index, prefix, indexKey) {
			return fmt.Errorf("storage/bolt: unlink identity: %w", storage.ErrLastLoginMethod)
		}
		if err := tx.Bucket(bucketIdentities).Delete(identityKey(provider, string(subject))); err != nil {
			return err
		}
		return index.Delete(indexKey)
	})
}

// hasOtherIdentity reports whether the user index holds a key under prefix other than except.
func hasOtherIdentity(index *bbolt.Bucket, prefix, except []byte) bool {
	c := index.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if !bytes.Equal(k, except) {
			return true
		}
	}
	return false
}

// checkIdentity refuses identities that cannot be keyed.
func checkIdentity(id storage.Identity) error {
	switch {
	case !validProvider(id.Provider):
		return errInvalid("identity provider %q", id.Provider)
	case id.Subject == "":
		return errInvalid("identity subject is empty")
	case !validUserID(id.UserID):
		return errInvalid("identity user id must be 1 to %d bytes", maxUserIDLen)
	}
	return nil
}

// putIdentity writes id and its per-user index entry.
func putIdentity(tx *bbolt.Tx, id storage.Identity) error {
	if err := tx.Bucket(bucketIdentities).Put(identityKey(id.Provider, id.Subject), encodeIdentity(id)); err != nil {
		return err
	}
	return tx.Bucket(bucketUserIdentities).Put(append(userPrefix(id.UserID), id.Provider...), []byte(id.Subject))
}
