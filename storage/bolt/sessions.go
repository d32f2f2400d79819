package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
)

// CreateSession stores s with its index entries (per user, by expiry) if
// its user exists, is enabled and is at s.Epoch (storage.ErrCredentialsChanged
// otherwise, see epoch.go). A record already stored under s.IDHash is
// replaced, its index entries included, so the indexes never point at a
// stale record.
func (s *Store) CreateSession(ctx context.Context, sess storage.Session) error {
	if !validUserID(sess.UserID) {
		return errInvalid("session user id must be 1 to %d bytes", maxUserIDLen)
	}
	return s.update(ctx, func(tx *bbolt.Tx) error {
		if err := checkSessionUser(tx, sess); err != nil {
			return err
		}
		if _, err := deleteSession(tx, sess.IDHash); err != nil {
			return err
		}
		return putSession(tx, sess)
	})
}

// Session returns the record stored under idHash, storage.ErrNotFound if
// there is none. It is on every proxied request's path: a record read since
// the last write comes from memory (sessioncache.go), otherwise one read
// transaction, one Get, one allocation for the decoded strings.
func (s *Store) Session(ctx context.Context, idHash storage.Hash) (storage.Session, error) {
	if err := ctx.Err(); err != nil {
		return storage.Session{}, err
	}
	if sess, ok := s.sessions.get(idHash); ok {
		return sess, nil
	}
	gen := s.sessions.generation() // before the read: see sessionCache
	var sess storage.Session
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketSessions).Get(idHash[:])
		if v == nil {
			return errSessionNotFound
		}
		var err error
		sess, err = decodeSession(idHash, v)
		return err
	})
	if err == nil {
		s.sessions.put(sess, gen)
	}
	return sess, err
}

// errSessionNotFound is preallocated: unknown cookies are the common miss.
var errSessionNotFound = notFound("session")

// DeleteSession deletes the session and its index entries; an unknown hash
// is not an error and writes nothing.
func (s *Store) DeleteSession(ctx context.Context, idHash storage.Hash) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		found, err := deleteSession(tx, idHash)
		if err == nil && !found {
			return errNoWrite
		}
		return err
	})
}

// DeleteUserSessions deletes every session of the user through the per-user
// index, without scanning other users' sessions, bumps the user's Epoch (if
// the user exists) and reports how many sessions it deleted.
func (s *Store) DeleteUserSessions(ctx context.Context, userID string) (int, error) {
	if !validUserID(userID) {
		return 0, nil
	}
	var n int
	err := s.update(ctx, func(tx *bbolt.Tx) (err error) {
		if n, err = deleteUserSessions(tx, userID); err != nil {
			return err
		}
		u, err := getUser(tx, userID)
		switch {
		case err == nil:
			_, err = putUserBumped(tx, u)
			return err
		case n == 0:
			return errNoWrite
		default:
			return nil
		}
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// DeleteOtherSessions bumps the user's Epoch, deletes every session of the
// user but keep and stores keep at the new Epoch, in one transaction; it
// reports how many went. keep missing or another user's:
// storage.ErrNotFound, nothing written.
func (s *Store) DeleteOtherSessions(ctx context.Context, userID string, keep storage.Hash) (int, error) {
	var n int
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketSessions).Get(keep[:])
		if v == nil {
			return notFound("session")
		}
		kept, err := decodeSession(keep, v)
		if err != nil {
			return err
		}
		if kept.UserID != userID {
			return notFound("session of the user")
		}
		u, err := getUser(tx, userID)
		if err != nil {
			return err
		}
		grant, hasGrant, err := getGrant(tx, keep)
		if err != nil {
			return err
		}
		if n, err = deleteUserSessions(tx, userID); err != nil { // keep too, put back below
			return err
		}
		if u, err = putUserBumped(tx, u); err != nil {
			return err
		}
		kept.Epoch = u.Epoch
		n--
		if err := putSession(tx, kept); err != nil {
			return err
		}
		if hasGrant {
			return putGrant(tx, grant)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// TouchSessions sets LastSeen of the given sessions in one transaction;
// unknown ones are skipped.
func (s *Store) TouchSessions(ctx context.Context, lastSeen map[storage.Hash]time.Time) error {
	if len(lastSeen) == 0 {
		return nil
	}
	return s.update(ctx, func(tx *bbolt.Tx) error {
		sessions := tx.Bucket(bucketSessions)
		changed := false
		for h, t := range lastSeen {
			v := sessions.Get(h[:])
			if v == nil {
				continue
			}
			updated, err := withLastSeen(v, t)
			if err != nil {
				return err
			}
			if err := sessions.Put(h[:], updated); err != nil {
				return err
			}
			changed = true
		}
		if !changed {
			return errNoWrite
		}
		return nil
	})
}

// putSession writes the record and its two index entries.
func putSession(tx *bbolt.Tx, sess storage.Session) error {
	if err := tx.Bucket(bucketSessions).Put(sess.IDHash[:], encodeSession(sess)); err != nil {
		return err
	}
	if err := tx.Bucket(bucketUserSessions).Put(userHashKey(sess.UserID, sess.IDHash), nil); err != nil {
		return err
	}
	return tx.Bucket(bucketSessionExpiry).Put(expiryKey(sess.ExpiresAt, sess.IDHash), nil)
}

// deleteSession deletes the record under idHash and its index entries, and
// reports whether there was one.
func deleteSession(tx *bbolt.Tx, idHash storage.Hash) (bool, error) {
	sessions := tx.Bucket(bucketSessions)
	v := sessions.Get(idHash[:])
	if v == nil {
		return false, nil
	}
	old, err := decodeSession(idHash, v)
	if err != nil {
		return false, err
	}
	if err := sessions.Delete(idHash[:]); err != nil {
		return false, err
	}
	if err := dropGrant(tx, idHash); err != nil {
		return false, err
	}
	if validUserID(old.UserID) {
		if err := tx.Bucket(bucketUserSessions).Delete(userHashKey(old.UserID, idHash)); err != nil {
			return false, err
		}
	}
	return true, tx.Bucket(bucketSessionExpiry).Delete(expiryKey(old.ExpiresAt, idHash))
}

// deleteUserSessions deletes every session listed under the user in the
// per-user index, with their index entries, and reports how many. Each
// bucket is visited in key order, so a cursor walks each tree once.
func deleteUserSessions(tx *bbolt.Tx, userID string) (int, error) {
	userSessions := tx.Bucket(bucketUserSessions)
	prefix := userPrefix(userID)
	hashes := hashKeysWithPrefix(userSessions, prefix) // sorted by hash
	expiryKeys := make([][]byte, 0, len(hashes))
	c := tx.Bucket(bucketSessions).Cursor()
	for _, h := range hashes {
		k, v := c.Seek(h[:])
		if !bytes.Equal(k, h[:]) {
			continue // index entry without a session: only the entry goes
		}
		if len(v) < sessionFixedLen {
			return 0, fmt.Errorf("session: %w", errCorrupt)
		}
		key := make([]byte, expiryKeyLen)
		binary.BigEndian.PutUint64(key, binary.BigEndian.Uint64(v[sessionExpiresAt:])^(1<<63))
		copy(key[timeKeySize:], h[:])
		expiryKeys = append(expiryKeys, key)
		if err := c.Delete(); err != nil {
			return 0, err
		}
		if err := dropGrant(tx, h); err != nil {
			return 0, err
		}
	}
	slices.SortFunc(expiryKeys, bytes.Compare)
	expiry := tx.Bucket(bucketSessionExpiry)
	for _, k := range expiryKeys {
		if err := expiry.Delete(k); err != nil {
			return 0, err
		}
	}
	for _, h := range hashes {
		if err := userSessions.Delete(userHashKey(userID, h)); err != nil {
			return 0, err
		}
	}
	return len(expiryKeys), nil
}

// DeleteExpiredSessions deletes sessions whose ExpiresAt is not after now
// (found through the expiry index) and, when idle > 0, sessions whose
// LastSeen is idle or more before now (found by a chunked scan), and reports
// how many. It deletes in chunks; see sweepChunk. Single-use marks past
// their time go too (grants.go).
func (s *Store) DeleteExpiredSessions(ctx context.Context, now time.Time, idle time.Duration) (int, error) {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		n, err := deleteUsedMarks(tx, now)
		if err == nil && n == 0 {
			return errNoWrite
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	total, err := s.sweepExpiryIndex(ctx, bucketSessionExpiry, now, deleteSession)
	if err != nil || idle <= 0 {
		return total, err
	}
	cutoff := timeToInt(now.Add(-idle))
	nowInt := timeToInt(now)
	idleOrExpired := func(_, v []byte) bool {
		if len(v) < sessionFixedLen {
			return false
		}
		lastSeen := int64(binary.BigEndian.Uint64(v[sessionLastSeen:]))
		expiresAt := int64(binary.BigEndian.Uint64(v[sessionExpiresAt:]))
		return lastSeen <= cutoff || expiresAt <= nowInt
	}
	n, err := s.sweepScan(ctx, bucketSessions, idleOrExpired, func(tx *bbolt.Tx, k []byte) error {
		var h storage.Hash
		copy(h[:], k)
		_, err := deleteSession(tx, h)
		return err
	})
	return total + n, err
}
