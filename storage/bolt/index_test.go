package bolt

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
)

// checkIndexes fails unless every index entry of the store points at a
// record that points back at it, and every record has its index entries.
// The conformance run calls it on each test's file after the suite closed it.
func checkIndexes(t *testing.T, path string) {
	t.Helper()
	s := openTest(t, path)
	defer s.Close()
	err := s.db.View(func(tx *bbolt.Tx) error {
		want := map[string]map[string]bool{} // bucket → keys the records imply
		add := func(bucket []byte, key []byte) {
			if want[string(bucket)] == nil {
				want[string(bucket)] = map[string]bool{}
			}
			want[string(bucket)][string(key)] = true
		}
		tokensOfUser := map[string]int{}
		err := forEach(tx, bucketUsers, func(k, v []byte) error {
			u, err := decodeUser(v)
			if string(k) != u.ID || u.Email != storage.NormalizeEmail(u.Email) {
				return fmt.Errorf("user %q: key or email form wrong (%v)", k, err)
			}
			if id := tx.Bucket(bucketUsersByEmail).Get([]byte(u.Email)); string(id) != u.ID {
				return fmt.Errorf("email %q maps to %q, want %q", u.Email, id, u.ID)
			}
			add(bucketUsersByEmail, []byte(u.Email))
			return err
		})
		err = with(err, forEach(tx, bucketIdentities, func(k, v []byte) error {
			id, err := decodeIdentity(v)
			ik := append(userPrefix(id.UserID), id.Provider...)
			if sub := tx.Bucket(bucketUserIdentities).Get(ik); string(sub) != id.Subject || !bytes.Equal(k, identityKey(id.Provider, id.Subject)) {
				return fmt.Errorf("identity %q: user index holds %q", k, sub)
			}
			add(bucketUserIdentities, ik)
			return err
		}))
		err = with(err, forEach(tx, bucketSessions, func(k, v []byte) error {
			sess, err := decodeSession(storage.Hash(k), v)
			add(bucketUserSessions, userHashKey(sess.UserID, sess.IDHash))
			add(bucketSessionExpiry, expiryKey(sess.ExpiresAt, sess.IDHash))
			return err
		}))
		err = with(err, forEach(tx, bucketResetTokens, func(k, v []byte) error {
			tok, err := decodeResetToken(storage.Hash(k), v)
			add(bucketUserTokens, userHashKey(tok.UserID, tok.Hash))
			if tokensOfUser[tok.UserID]++; tokensOfUser[tok.UserID] > 1 {
				return fmt.Errorf("user %q has more than one reset token", tok.UserID)
			}
			return err
		}))
		err = with(err, forEach(tx, bucketOAuthFlows, func(k, v []byte) error {
			f, err := decodeOAuthFlow(storage.Hash(k), v)
			add(bucketOAuthExpiry, expiryKey(f.ExpiresAt, f.StateHash))
			return err
		}))
		for _, index := range [][]byte{bucketUsersByEmail, bucketUserIdentities, bucketUserSessions,
			bucketSessionExpiry, bucketUserTokens, bucketOAuthExpiry} {
			err = with(err, forEach(tx, index, func(k, _ []byte) error {
				if !want[string(index)][string(k)] {
					return fmt.Errorf("%s: stale entry %x", index, k)
				}
				delete(want[string(index)], string(k))
				return nil
			}))
			for k := range want[string(index)] {
				err = with(err, fmt.Errorf("%s: missing entry %x", index, k))
			}
		}
		return err
	})
	if err != nil {
		t.Errorf("index check of %s: %v", path, err)
	}
}

func forEach(tx *bbolt.Tx, bucket []byte, fn func(k, v []byte) error) error {
	return tx.Bucket(bucket).ForEach(fn)
}

// with returns the first non-nil error.
func with(err, next error) error {
	if err != nil {
		return err
	}
	return next
}
