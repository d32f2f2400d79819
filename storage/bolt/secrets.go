package bolt

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"

	"go.etcd.io/bbolt"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// bucketSecrets holds server secrets: name → SecretSize random bytes. It is
// made on first use, so files written before it existed need no migration.
var bucketSecrets = []byte("secrets")

// Secret returns the named secret, making and storing it on first use.
func (s *Store) Secret(ctx context.Context, name string) ([]byte, error) {
	if name == "" {
		return nil, errors.New("storage/bolt: secret without a name")
	}
	var secret []byte
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		if b := tx.Bucket(bucketSecrets); b != nil {
			secret = bytes.Clone(b.Get([]byte(name)))
		}
		return nil
	})
	if err != nil || len(secret) == storage.SecretSize {
		return secret, err
	}
	err = s.update(ctx, func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketSecrets)
		if err != nil {
			return err
		}
		if v := b.Get([]byte(name)); len(v) == storage.SecretSize {
			secret = bytes.Clone(v) // another caller made it meanwhile
			return errNoWrite
		}
		secret = make([]byte, storage.SecretSize)
		_, _ = rand.Read(secret)
		return b.Put([]byte(name), secret)
	})
	if err != nil {
		return nil, err
	}
	return secret, nil
}
