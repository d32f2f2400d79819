package bolt

import (
	"bytes"
	"context"
	"errors"
	"slices"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
)

// ImportSessions writes many sessions in one transaction, for benchmarks
// and bulk loads. Each session is stored as CreateSession stores it, but the
// keys of every bucket are written in sorted order, which keeps bbolt's
// in-transaction nodes appending instead of shifting: a million sessions
// load in seconds. A hash already stored is refused, and nothing is written.
func (s *Store) ImportSessions(ctx context.Context, sessions []storage.Session) error {
	if len(sessions) == 0 {
		return nil
	}
	type row struct{ key, value []byte }
	bySession := make([]row, 0, len(sessions))
	byUser := make([]row, 0, len(sessions))
	byExpiry := make([]row, 0, len(sessions))
	for _, sess := range sessions {
		if !validUserID(sess.UserID) {
			return errInvalid("session user id must be 1 to %d bytes", maxUserIDLen)
		}
		bySession = append(bySession, row{sess.IDHash[:], encodeSession(sess)})
		byUser = append(byUser, row{key: userHashKey(sess.UserID, sess.IDHash)})
		byExpiry = append(byExpiry, row{key: expiryKey(sess.ExpiresAt, sess.IDHash)})
	}
	return s.update(ctx, func(tx *bbolt.Tx) error {
		for _, bucket := range []struct {
			name   []byte
			rows   []row
			unique bool
		}{{bucketSessions, bySession, true}, {bucketUserSessions, byUser, false}, {bucketSessionExpiry, byExpiry, false}} {
			if err := ctx.Err(); err != nil {
				return err
			}
			slices.SortFunc(bucket.rows, func(a, b row) int { return bytes.Compare(a.key, b.key) })
			b := tx.Bucket(bucket.name)
			b.FillPercent = 0.9 // mostly appended: fuller pages, smaller file
			for _, r := range bucket.rows {
				if bucket.unique && b.Get(r.key) != nil {
					return errors.New("storage/bolt: import sessions: a session hash is already stored")
				}
				if err := b.Put(r.key, r.value); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
