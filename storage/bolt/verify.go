package bolt

import (
	"bytes"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Report is what Verify found in a database file.
type Report struct {
	Users, Sessions int
	// StaleSessions are sessions that outlived a credential change: their
	// user is gone or disabled, or at a later credential epoch than the
	// session was made under. There should be none.
	StaleSessions int
	// ResetJobs counts the queued password reset jobs per user id.
	ResetJobs map[string]int
}

// Verify opens the file at path read-only, waiting at most timeout for
// another process's lock, and checks it: bbolt's own consistency check of
// every page, then every index against its records (see checkIndexes). It
// counts what Report holds and never writes. A damaged file is an error,
// never a panic.
func Verify(path string, timeout time.Duration) (r Report, err error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: timeout})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return r, fmt.Errorf("storage/bolt: verify %s: %w", path, ErrLocked)
	}
	if err != nil {
		return r, fmt.Errorf("storage/bolt: verify %s: %w", path, err)
	}
	defer db.Close()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("storage/bolt: verify %s: damaged file: %v", path, p)
		}
	}()
	err = db.View(func(tx *bbolt.Tx) error {
		var problems []string
		for e := range tx.Check() {
			problems = append(problems, e.Error())
		}
		if len(problems) > 0 {
			return fmt.Errorf("consistency check: %d problems: %s", len(problems), oneLine(strings.Join(problems, "; ")))
		}
		for _, name := range allBuckets {
			if tx.Bucket(name) == nil {
				return fmt.Errorf("bucket %s missing", name)
			}
		}
		if err := checkIndexes(tx); err != nil {
			return err
		}
		return count(tx, &r)
	})
	if err != nil {
		return Report{}, fmt.Errorf("storage/bolt: verify %s: %w", path, err)
	}
	return r, nil
}

// count fills r from the records of tx.
func count(tx *bbolt.Tx, r *Report) error {
	users := map[string]storage.User{}
	err := forEach(tx, bucketUsers, func(_, v []byte) error {
		u, err := decodeUser(v)
		users[u.ID] = u
		return err
	})
	r.Users = len(users)
	err = with(err, forEach(tx, bucketSessions, func(k, v []byte) error {
		sess, err := decodeSession(storage.Hash(k), v)
		r.Sessions++
		if u, ok := users[sess.UserID]; !ok || u.Disabled || sess.Epoch < u.Epoch {
			r.StaleSessions++
		}
		return err
	}))
	r.ResetJobs = map[string]int{}
	return with(err, forEach(tx, bucketMail, func(k, v []byte) error {
		m, err := decodeMail(0, v)
		if m.Kind == storage.MailKindPasswordReset {
			r.ResetJobs[m.UserID]++
		}
		return err
	}))
}

// checkIndexes reports the first index entry that does not point at a
// record pointing back at it, or record without its index entries.
func checkIndexes(tx *bbolt.Tx) error {
	want := map[string]map[string]bool{} // bucket → keys the records imply
	add := func(bucket []byte, key []byte) {
		if want[string(bucket)] == nil {
			want[string(bucket)] = map[string]bool{}
		}
		want[string(bucket)][string(key)] = true
	}
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
	for _, kind := range []tokenKind{resetKind, inviteKind} {
		tokensOfUser := map[string]int{}
		err = with(err, forEach(tx, kind.tokens, func(k, v []byte) error {
			tok, err := decodeResetToken(storage.Hash(k), v)
			add(kind.byUser, userHashKey(tok.UserID, tok.Hash))
			if tokensOfUser[tok.UserID]++; tokensOfUser[tok.UserID] > 1 {
				return fmt.Errorf("user %q has more than one %s (%s)", tok.UserID, kind.what, kind.tokens)
			}
			return err
		}))
	}
	err = with(err, forEach(tx, bucketOAuthFlows, func(k, v []byte) error {
		f, err := decodeOAuthFlow(storage.Hash(k), v)
		add(bucketOAuthExpiry, expiryKey(f.ExpiresAt, f.StateHash))
		return err
	}))
	err = with(err, checkAPITokenIndexes(tx, add))
	for _, index := range [][]byte{bucketUsersByEmail, bucketUserIdentities, bucketUserSessions,
		bucketSessionExpiry, bucketUserTokens, bucketUserInvites, bucketOAuthExpiry,
		bucketAPITokenIDs, bucketUserAPITokens} {
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
