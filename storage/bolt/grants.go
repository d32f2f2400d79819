package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
)

// Provider sessions' grants: one record per session under its hash, an
// index by NextRefresh for ClaimDueGrants, and the single-use marks of
// UseOnce. A grant goes with its session: deleteSession and
// deleteUserSessions delete it (dropGrant).
var (
	bucketGrants    = []byte("grants")     // session hash → grant
	bucketGrantDue  = []byte("grant_due")  // sortable next refresh + session hash → empty
	bucketUsedMarks = []byte("used_marks") // key hash → sortable until
)

// grantRecord is the stored form of a grant (off the request path: JSON).
type grantRecord struct {
	UserID      string `json:"u"`
	Provider    string `json:"p"`
	Subject     string `json:"s"`
	SID         string `json:"i,omitempty"`
	Tokens      []byte `json:"t,omitempty"`
	NextRefresh int64  `json:"n"`
}

func encodeGrant(g storage.Grant) []byte {
	b, _ := json.Marshal(grantRecord{g.UserID, g.Provider, g.Subject, g.SID, g.Tokens, timeToInt(g.NextRefresh)})
	return b
}

func decodeGrant(h storage.Hash, v []byte) (storage.Grant, error) {
	var r grantRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return storage.Grant{}, fmt.Errorf("grant: %w", errCorrupt)
	}
	return storage.Grant{Session: h, UserID: r.UserID, Provider: r.Provider, Subject: r.Subject,
		SID: r.SID, Tokens: r.Tokens, NextRefresh: intToTime(r.NextRefresh)}, nil
}

// getGrant reads the grant of h; ok false when there is none.
func getGrant(tx *bbolt.Tx, h storage.Hash) (storage.Grant, bool, error) {
	v := tx.Bucket(bucketGrants).Get(h[:])
	if v == nil {
		return storage.Grant{}, false, nil
	}
	g, err := decodeGrant(h, v)
	return g, err == nil, err
}

// putGrant writes g and its due index entry, replacing any grant of its session.
func putGrant(tx *bbolt.Tx, g storage.Grant) error {
	if err := dropGrant(tx, g.Session); err != nil {
		return err
	}
	if err := tx.Bucket(bucketGrants).Put(g.Session[:], encodeGrant(g)); err != nil {
		return err
	}
	return tx.Bucket(bucketGrantDue).Put(expiryKey(g.NextRefresh, g.Session), nil)
}

// dropGrant deletes the grant of h and its index entry, if any.
func dropGrant(tx *bbolt.Tx, h storage.Hash) error {
	g, ok, err := getGrant(tx, h)
	if err != nil || !ok {
		return err
	}
	if err := tx.Bucket(bucketGrantDue).Delete(expiryKey(g.NextRefresh, h)); err != nil {
		return err
	}
	return tx.Bucket(bucketGrants).Delete(h[:])
}

// PutGrant stores g while its session exists.
func (s *Store) PutGrant(ctx context.Context, g storage.Grant) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketSessions).Get(g.Session[:]) == nil {
			return notFound("session of the grant")
		}
		return putGrant(tx, g)
	})
}

// GrantOf returns the session's grant.
func (s *Store) GrantOf(ctx context.Context, session storage.Hash) (storage.Grant, error) {
	var g storage.Grant
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var ok bool
		var err error
		if g, ok, err = getGrant(tx, session); err == nil && !ok {
			return notFound("grant")
		}
		return err
	})
	return g, err
}

// ClaimDueGrants follows the due index up to now and moves what it takes to until.
func (s *Store) ClaimDueGrants(ctx context.Context, now, until time.Time, limit int) ([]storage.Grant, error) {
	var out []storage.Grant
	nowKey := make([]byte, timeKeySize)
	putSortableTime(nowKey, now)
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		out = out[:0]
		var due []storage.Hash
		c := tx.Bucket(bucketGrantDue).Cursor()
		for k, _ := c.First(); k != nil && len(due) < limit; k, _ = c.Next() {
			if len(k) != expiryKeyLen || bytes.Compare(k[:timeKeySize], nowKey) > 0 {
				break
			}
			var h storage.Hash
			copy(h[:], k[timeKeySize:])
			due = append(due, h)
		}
		if len(due) == 0 {
			return errNoWrite
		}
		for _, h := range due {
			g, ok, err := getGrant(tx, h)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			g.NextRefresh = until
			if err := putGrant(tx, g); err != nil {
				return err
			}
			out = append(out, g)
		}
		return nil
	})
	return out, err
}

// RefreshSession sets the session's groups and its grant's tokens and next refresh.
func (s *Store) RefreshSession(ctx context.Context, session storage.Hash, groups string, tokens []byte, next time.Time) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketSessions).Get(session[:])
		if v == nil {
			return notFound("session")
		}
		sess, err := decodeSession(session, v)
		if err != nil {
			return err
		}
		g, ok, err := getGrant(tx, session)
		if err != nil {
			return err
		}
		if !ok {
			return notFound("grant")
		}
		sess.Groups = groups
		if err := tx.Bucket(bucketSessions).Put(session[:], encodeSession(sess)); err != nil {
			return err
		}
		if tokens != nil {
			g.Tokens = tokens
		}
		g.NextRefresh = next
		return putGrant(tx, g)
	})
}

// EndGrantSessions scans the grants (a back-channel logout is rare) and
// deletes the matching sessions.
func (s *Store) EndGrantSessions(ctx context.Context, provider, subject, sid string) ([]storage.Grant, error) {
	if subject == "" && sid == "" {
		return nil, errInvalid("ending grant sessions needs a subject or a sid")
	}
	var out []storage.Grant
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		out = out[:0]
		c := tx.Bucket(bucketGrants).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var h storage.Hash
			copy(h[:], k)
			g, err := decodeGrant(h, v)
			if err != nil {
				return err
			}
			if g.Provider == provider && (subject == "" || g.Subject == subject) && (sid == "" || g.SID == sid) {
				out = append(out, g)
			}
		}
		if len(out) == 0 {
			return errNoWrite
		}
		for _, g := range out {
			if _, err := deleteSession(tx, g.Session); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// UseOnce marks key until until, unless an unexpired mark is there.
func (s *Store) UseOnce(ctx context.Context, key storage.Hash, now, until time.Time) (bool, error) {
	first := false
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketUsedMarks)
		nowKey := make([]byte, timeKeySize)
		putSortableTime(nowKey, now)
		if v := b.Get(key[:]); v != nil && bytes.Compare(v, nowKey) > 0 {
			return errNoWrite
		}
		first = true
		mark := make([]byte, timeKeySize)
		putSortableTime(mark, until)
		return b.Put(key[:], mark)
	})
	return first, err
}

// deleteUsedMarks deletes the marks past their until at now (in the
// session sweep; marks are few: one per logout token).
func deleteUsedMarks(tx *bbolt.Tx, now time.Time) (int, error) {
	nowKey := make([]byte, timeKeySize)
	putSortableTime(nowKey, now)
	var expired [][]byte
	c := tx.Bucket(bucketUsedMarks).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if bytes.Compare(v, nowKey) <= 0 {
			expired = append(expired, bytes.Clone(k))
		}
	}
	for _, k := range expired {
		if err := tx.Bucket(bucketUsedMarks).Delete(k); err != nil {
			return 0, err
		}
	}
	return len(expired), nil
}
