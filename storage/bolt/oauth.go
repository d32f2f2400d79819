package bolt

import (
	"context"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
)

// CreateOAuthFlow stores f under f.StateHash with its expiry index entry,
// replacing any flow stored under the same hash.
func (s *Store) CreateOAuthFlow(ctx context.Context, f storage.OAuthFlow) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		if _, err := deleteOAuthFlow(tx, f.StateHash); err != nil {
			return err
		}
		if err := tx.Bucket(bucketOAuthFlows).Put(f.StateHash[:], encodeOAuthFlow(f)); err != nil {
			return err
		}
		return tx.Bucket(bucketOAuthExpiry).Put(expiryKey(f.ExpiresAt, f.StateHash), nil)
	})
}

// TakeOAuthFlow deletes and returns the flow: single use. Missing:
// storage.ErrNotFound and nothing is written. Expired at now (ExpiresAt not
// after now): deleted, and storage.ErrNotFound.
func (s *Store) TakeOAuthFlow(ctx context.Context, stateHash storage.Hash, now time.Time) (storage.OAuthFlow, error) {
	var (
		f     storage.OAuthFlow
		found bool
	)
	err := s.update(ctx, func(tx *bbolt.Tx) (err error) {
		f, found, err = takeOAuthFlow(tx, stateHash)
		if err == nil && !found {
			return errNoWrite
		}
		return err
	})
	switch {
	case err != nil:
		return storage.OAuthFlow{}, err
	case !found || !now.Before(f.ExpiresAt):
		return storage.OAuthFlow{}, notFound("oauth flow")
	}
	return f, nil
}

// DeleteExpiredOAuthFlows deletes flows whose ExpiresAt is not after now,
// found through the expiry index, and reports how many. It deletes in
// chunks; see sweepChunk.
func (s *Store) DeleteExpiredOAuthFlows(ctx context.Context, now time.Time) (int, error) {
	return s.sweepExpiryIndex(ctx, bucketOAuthExpiry, now, deleteOAuthFlow)
}

// takeOAuthFlow deletes the flow under h with its index entry and returns it.
func takeOAuthFlow(tx *bbolt.Tx, h storage.Hash) (storage.OAuthFlow, bool, error) {
	flows := tx.Bucket(bucketOAuthFlows)
	v := flows.Get(h[:])
	if v == nil {
		return storage.OAuthFlow{}, false, nil
	}
	f, err := decodeOAuthFlow(h, v)
	if err != nil {
		return storage.OAuthFlow{}, false, err
	}
	if err := flows.Delete(h[:]); err != nil {
		return storage.OAuthFlow{}, false, err
	}
	return f, true, tx.Bucket(bucketOAuthExpiry).Delete(expiryKey(f.ExpiresAt, h))
}

// deleteOAuthFlow deletes the flow under h and reports whether there was one.
func deleteOAuthFlow(tx *bbolt.Tx, h storage.Hash) (bool, error) {
	_, found, err := takeOAuthFlow(tx, h)
	return found, err
}
