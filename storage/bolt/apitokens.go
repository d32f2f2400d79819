package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
)

// API tokens live in bucketAPITokens under their hash (the per-request
// lookup is one Get), with two indexes: bucketAPITokenIDs maps the public
// id to the hash (list, revoke) and bucketUserAPITokens holds user prefix +
// hash for the tokens of a user (DeleteUser).

// maxAPITokenGroups bounds a service token's groups.
const maxAPITokenGroups = 256

// CreateAPIToken stores t with its index entries. A user's token needs its
// user, checked in the same transaction (storage.ErrNotFound otherwise); an
// id or hash already stored is refused.
func (s *Store) CreateAPIToken(ctx context.Context, t storage.APIToken) error {
	if err := checkAPIToken(t); err != nil {
		return err
	}
	return s.update(ctx, func(tx *bbolt.Tx) error {
		if t.UserID != "" {
			if _, err := getUser(tx, t.UserID); err != nil {
				return fmt.Errorf("storage/bolt: create API token: %w", err)
			}
		}
		ids := tx.Bucket(bucketAPITokenIDs)
		if ids.Get([]byte(t.ID)) != nil {
			return fmt.Errorf("storage/bolt: create API token: an API token with id %s exists", t.ID)
		}
		tokens := tx.Bucket(bucketAPITokens)
		if tokens.Get(t.Hash[:]) != nil {
			return errors.New("storage/bolt: create API token: an API token with this hash exists")
		}
		if err := tokens.Put(t.Hash[:], encodeAPIToken(t)); err != nil {
			return err
		}
		if err := ids.Put([]byte(t.ID), t.Hash[:]); err != nil {
			return err
		}
		if t.UserID == "" {
			return nil
		}
		return tx.Bucket(bucketUserAPITokens).Put(userHashKey(t.UserID, t.Hash), nil)
	})
}

// checkAPIToken refuses a record the layout cannot hold or that belongs to
// no one (or to a user and a service at once).
func checkAPIToken(t storage.APIToken) error {
	switch {
	case t.ID == "" || len(t.ID) > maxUserIDLen:
		return errInvalid("API token id must be 1 to %d bytes", maxUserIDLen)
	case (t.UserID == "") == (t.Service == ""):
		return errInvalid("an API token belongs to a user or to a service")
	case t.UserID != "" && !validUserID(t.UserID):
		return errInvalid("API token user id must be 1 to %d bytes", maxUserIDLen)
	case len(t.Groups) > maxAPITokenGroups:
		return errInvalid("an API token has at most %d groups", maxAPITokenGroups)
	}
	return nil
}

// APITokens returns every token, oldest first (ties by id).
func (s *Store) APITokens(ctx context.Context) ([]storage.APIToken, error) {
	var out []storage.APIToken
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketAPITokens).ForEach(func(k, v []byte) error {
			if len(k) != storage.HashSize {
				return fmt.Errorf("API token key: %w", errCorrupt)
			}
			t, err := decodeAPIToken(storage.Hash(k), v)
			if err != nil {
				return err
			}
			out = append(out, t)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b storage.APIToken) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// RevokeAPIToken deletes the token with that id and its index entries and
// returns it; an unknown id is storage.ErrNotFound and writes nothing.
func (s *Store) RevokeAPIToken(ctx context.Context, id string) (storage.APIToken, error) {
	var revoked storage.APIToken
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketAPITokenIDs).Get([]byte(id))
		if len(v) != storage.HashSize {
			return notFound("API token")
		}
		t, found, err := deleteAPIToken(tx, storage.Hash(v))
		if err != nil {
			return err
		}
		if !found {
			return notFound("API token")
		}
		revoked = t
		return nil
	})
	return revoked, err
}

// deleteAPIToken deletes the token under h and its index entries, and
// returns it with whether there was one.
func deleteAPIToken(tx *bbolt.Tx, h storage.Hash) (storage.APIToken, bool, error) {
	tokens := tx.Bucket(bucketAPITokens)
	v := tokens.Get(h[:])
	if v == nil {
		return storage.APIToken{}, false, nil
	}
	t, err := decodeAPIToken(h, v)
	if err != nil {
		return storage.APIToken{}, false, err
	}
	if err := tokens.Delete(h[:]); err != nil {
		return storage.APIToken{}, false, err
	}
	if err := tx.Bucket(bucketAPITokenIDs).Delete([]byte(t.ID)); err != nil {
		return storage.APIToken{}, false, err
	}
	if validUserID(t.UserID) {
		if err := tx.Bucket(bucketUserAPITokens).Delete(userHashKey(t.UserID, h)); err != nil {
			return storage.APIToken{}, false, err
		}
	}
	return t, true, nil
}

// deleteUserAPITokens deletes every token of the user, with its index entries.
func deleteUserAPITokens(tx *bbolt.Tx, userID string) error {
	index := tx.Bucket(bucketUserAPITokens)
	for _, h := range hashKeysWithPrefix(index, userPrefix(userID)) {
		if _, _, err := deleteAPIToken(tx, h); err != nil {
			return err
		}
		if err := index.Delete(userHashKey(userID, h)); err != nil { // an entry without its token
			return err
		}
	}
	return nil
}

// APITokenByHash returns the token under h with its owner's state. It is
// on the path of every request that carries a token: a record read since
// the last write comes from memory (apiTokenCache), otherwise one read
// transaction with one or two Gets.
func (s *Store) APITokenByHash(ctx context.Context, h storage.Hash) (storage.APIToken, storage.APITokenOwner, error) {
	if err := ctx.Err(); err != nil {
		return storage.APIToken{}, storage.APITokenOwner{}, err
	}
	gen := s.sessions.generation() // before the read: see sessionCache
	if e, ok := s.apiTokens.get(h, gen); ok {
		return e.token, e.owner, nil
	}
	var (
		t     storage.APIToken
		owner storage.APITokenOwner
	)
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketAPITokens).Get(h[:])
		if v == nil {
			return errAPITokenNotFound
		}
		var err error
		if t, err = decodeAPIToken(h, v); err != nil {
			return err
		}
		if t.UserID == "" {
			return nil
		}
		u, err := getUser(tx, t.UserID)
		if err != nil {
			return err
		}
		owner = storage.APITokenOwner{Email: u.Email, Disabled: u.Disabled}
		return nil
	})
	if err != nil {
		return storage.APIToken{}, storage.APITokenOwner{}, err
	}
	s.apiTokens.put(h, cachedAPIToken{token: t, owner: owner, gen: gen}, s.sessions.generation())
	return t, owner, nil
}

// errAPITokenNotFound is preallocated: unknown tokens are the common miss.
var errAPITokenNotFound = notFound("API token")

// TouchAPITokens moves LastUsed of the given tokens forward to the given
// times, in one transaction; unknown tokens, and times not after the
// stored one, are skipped.
func (s *Store) TouchAPITokens(ctx context.Context, lastUsed map[storage.Hash]time.Time) error {
	if len(lastUsed) == 0 {
		return nil
	}
	return s.update(ctx, func(tx *bbolt.Tx) error {
		tokens := tx.Bucket(bucketAPITokens)
		changed := false
		for h, at := range lastUsed {
			v := tokens.Get(h[:])
			if v == nil {
				continue
			}
			t, err := decodeAPIToken(h, v)
			if err != nil {
				return err
			}
			if !at.After(t.LastUsed) {
				continue
			}
			t.LastUsed = at
			if err := tokens.Put(h[:], encodeAPIToken(t)); err != nil {
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

// API token layout (version 1): ID, Name, UserID, Service, the number of
// groups (varint) and each group, CreatedAt, ExpiresAt, LastUsed. The hash
// is the key.
func encodeAPIToken(t storage.APIToken) []byte {
	e := newEncoder()
	e.str(t.ID)
	e.str(t.Name)
	e.str(t.UserID)
	e.str(t.Service)
	e.varint(int64(len(t.Groups)))
	for _, g := range t.Groups {
		e.str(g)
	}
	e.time(t.CreatedAt)
	e.time(t.ExpiresAt)
	e.time(t.LastUsed)
	return e.b
}

func decodeAPIToken(h storage.Hash, v []byte) (storage.APIToken, error) {
	d := newDecoder(v)
	t := storage.APIToken{Hash: h, ID: d.str(), Name: d.str(), UserID: d.str(), Service: d.str()}
	n := d.varint()
	if n < 0 || n > maxAPITokenGroups {
		d.bad = true
	}
	for i := int64(0); i < n && !d.bad; i++ {
		t.Groups = append(t.Groups, d.str())
	}
	t.CreatedAt, t.ExpiresAt, t.LastUsed = d.time(), d.time(), d.time()
	return t, d.err("API token")
}

// checkAPITokenIndexes adds to want the index entries that the stored
// tokens imply, and fails when an id entry does not point back at its token.
func checkAPITokenIndexes(tx *bbolt.Tx, add func(bucket, key []byte)) error {
	return forEach(tx, bucketAPITokens, func(k, v []byte) error {
		if len(k) != storage.HashSize {
			return fmt.Errorf("API token key %x: %w", k, errCorrupt)
		}
		t, err := decodeAPIToken(storage.Hash(k), v)
		if err != nil {
			return err
		}
		if h := tx.Bucket(bucketAPITokenIDs).Get([]byte(t.ID)); !bytes.Equal(h, k) {
			return fmt.Errorf("API token id %q maps to %x, want %x", t.ID, h, k)
		}
		add(bucketAPITokenIDs, []byte(t.ID))
		if t.UserID != "" {
			add(bucketUserAPITokens, userHashKey(t.UserID, t.Hash))
		}
		return nil
	})
}
