package bolt

import (
	"bytes"
	"context"
	"slices"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
)

// DeleteUser deletes the user, its email index entry, its identities, its
// sessions, its reset, invite and API tokens, its second factors and its queued mail (jobs for the
// user and messages to its address), in one transaction. An unknown user is
// storage.ErrNotFound and nothing is written.
func (s *Store) DeleteUser(ctx context.Context, userID string) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		u, err := getUser(tx, userID)
		if err != nil {
			return err
		}
		if err := tx.Bucket(bucketUsers).Delete([]byte(u.ID)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketUsersByEmail).Delete([]byte(u.Email)); err != nil {
			return err
		}
		if err := deleteUserIdentities(tx, u.ID); err != nil {
			return err
		}
		if _, err := deleteUserSessions(tx, u.ID); err != nil {
			return err
		}
		if err := voidTokens(tx, resetKind, u.ID); err != nil {
			return err
		}
		if err := voidTokens(tx, inviteKind, u.ID); err != nil {
			return err
		}
		if err := deleteUserSecondFactors(tx, u.ID); err != nil {
			return err
		}
		if err := deleteUserAPITokens(tx, u.ID); err != nil {
			return err
		}
		return deleteUserMail(tx, u)
	})
}

// deleteUserIdentities deletes every identity of the user and its index entry.
func deleteUserIdentities(tx *bbolt.Tx, userID string) error {
	index := tx.Bucket(bucketUserIdentities)
	identities := tx.Bucket(bucketIdentities)
	prefix := userPrefix(userID)
	var keys [][]byte
	c := index.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		provider := string(k[len(prefix):])
		if err := identities.Delete(identityKey(provider, string(v))); err != nil {
			return err
		}
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := index.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// deleteUserMail deletes queued mail for the user: jobs naming its id and
// messages to its address. The queue is small (mail leaves it when sent), so
// a scan is fine.
func deleteUserMail(tx *bbolt.Tx, u storage.User) error {
	b := tx.Bucket(bucketMail)
	var keys [][]byte
	err := b.ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			return nil
		}
		m, err := decodeMail(0, v)
		if err != nil {
			return err
		}
		if m.UserID == u.ID || storage.NormalizeEmail(m.To) == u.Email {
			keys = append(keys, bytes.Clone(k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// SessionsOfUser returns the user's sessions through the per-user index,
// newest first.
func (s *Store) SessionsOfUser(ctx context.Context, userID string) ([]storage.Session, error) {
	if !validUserID(userID) {
		return nil, nil
	}
	var out []storage.Session
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		sessions := tx.Bucket(bucketSessions)
		for _, h := range hashKeysWithPrefix(tx.Bucket(bucketUserSessions), userPrefix(userID)) {
			v := sessions.Get(h[:])
			if v == nil {
				continue
			}
			sess, err := decodeSession(h, v)
			if err != nil {
				return err
			}
			out = append(out, sess)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b storage.Session) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return bytes.Compare(a.IDHash[:], b.IDHash[:])
	})
	return out, nil
}
