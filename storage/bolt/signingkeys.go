package bolt

import (
	"context"
	"fmt"
	"slices"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
)

// The signing_keys bucket (key id → signing key) holds a handful of keys at
// most (current, next, retired ones), so they are read whole and sorted.

// SigningKeys returns every stored key, ordered by ActiveFrom then ID.
func (s *Store) SigningKeys(ctx context.Context) ([]storage.SigningKey, error) {
	var keys []storage.SigningKey
	err := s.view(ctx, func(tx *bbolt.Tx) (err error) {
		keys, err = readSigningKeys(tx)
		return err
	})
	return keys, err
}

// AddSigningKey stores k if the newest key is after; see storage.SigningKeyStore.
func (s *Store) AddSigningKey(ctx context.Context, k storage.SigningKey, after string) error {
	if k.ID == "" || len(k.PrivateKey) == 0 {
		return fmt.Errorf("storage/bolt: signing key needs an id and a private key")
	}
	return s.update(ctx, func(tx *bbolt.Tx) error {
		keys, err := readSigningKeys(tx)
		if err != nil {
			return err
		}
		newest := ""
		if len(keys) > 0 {
			newest = keys[len(keys)-1].ID
		}
		b := tx.Bucket(bucketSigningKeys)
		if newest != after || b.Get([]byte(k.ID)) != nil {
			return fmt.Errorf("storage/bolt: add signing key %q after %q (newest is %q): %w", k.ID, after, newest, storage.ErrConflict)
		}
		return b.Put([]byte(k.ID), encodeSigningKey(k))
	})
}

// DeleteSigningKey removes the key; an unknown id is not an error.
func (s *Store) DeleteSigningKey(ctx context.Context, id string) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketSigningKeys)
		if b.Get([]byte(id)) == nil {
			return errNoWrite
		}
		return b.Delete([]byte(id))
	})
}

func readSigningKeys(tx *bbolt.Tx) ([]storage.SigningKey, error) {
	var keys []storage.SigningKey
	err := tx.Bucket(bucketSigningKeys).ForEach(func(k, v []byte) error {
		key, err := decodeSigningKey(string(k), v)
		if err != nil {
			return err
		}
		keys = append(keys, key)
		return nil
	})
	slices.SortFunc(keys, func(a, b storage.SigningKey) int {
		if c := a.ActiveFrom.Compare(b.ActiveFrom); c != 0 {
			return c
		}
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return keys, err
}

// Signing key layout: version 1, PrivateKey (as a string), CreatedAt, ActiveFrom.
func encodeSigningKey(k storage.SigningKey) []byte {
	e := newEncoder()
	e.str(string(k.PrivateKey))
	e.time(k.CreatedAt)
	e.time(k.ActiveFrom)
	return e.b
}

func decodeSigningKey(id string, v []byte) (storage.SigningKey, error) {
	d := newDecoder(v)
	k := storage.SigningKey{ID: id, PrivateKey: []byte(d.str()), CreatedAt: d.time(), ActiveFrom: d.time()}
	return k, d.err("signing key")
}
