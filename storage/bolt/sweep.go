package bolt

import (
	"bytes"
	"context"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
)

// Sweeps delete expired records in chunks, one write transaction per chunk,
// so that sweeping a large store never holds bbolt's single writer lock for
// long: requests that sign in or out wait for one chunk at most.
const (
	// sweepChunk is the most records one write transaction deletes.
	sweepChunk = 5000
	// scanChunk is the most records one read transaction examines when a
	// sweep has no index to follow (idle sessions, reset tokens).
	scanChunk = 50000
)

// sweepExpiryIndex deletes, chunk by chunk, every record whose key in the
// expiry index bucket index is not after now. del deletes the record and its
// other index entries and reports whether it existed; the expiry entry itself
// is deleted here. It returns the number of records deleted.
func (s *Store) sweepExpiryIndex(ctx context.Context, index []byte, now time.Time,
	del func(tx *bbolt.Tx, h storage.Hash) (bool, error)) (int, error) {
	nowKey := make([]byte, timeKeySize)
	putSortableTime(nowKey, now)
	total := 0
	for {
		n, keys := 0, 0
		err := s.update(ctx, func(tx *bbolt.Tx) error {
			b := tx.Bucket(index)
			var expired [][]byte
			c := b.Cursor()
			for k, _ := c.First(); k != nil && len(expired) < sweepChunk; k, _ = c.Next() {
				if bytes.Compare(k[:min(len(k), timeKeySize)], nowKey) > 0 {
					break
				}
				expired = append(expired, bytes.Clone(k))
			}
			keys = len(expired)
			if keys == 0 {
				return errNoWrite
			}
			for _, k := range expired {
				var h storage.Hash
				copy(h[:], k[min(len(k), timeKeySize):])
				found, err := del(tx, h)
				if err != nil {
					return err
				}
				if found {
					n++
				}
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total += n
		if keys < sweepChunk {
			return total, nil
		}
	}
}

// sweepScan deletes, chunk by chunk, every record of bucket for which
// expired(value) holds. Records are found by read transactions that examine
// at most scanChunk records each; each write transaction deletes at most
// sweepChunk of them, checking expired again first (the record may have been
// touched in between). del deletes a record and its index entries.
func (s *Store) sweepScan(ctx context.Context, bucket []byte, expired func(k, v []byte) bool,
	del func(tx *bbolt.Tx, k []byte) error) (int, error) {
	total := 0
	var after []byte // last key examined; nil before the first chunk
	for done := false; !done; {
		var candidates [][]byte
		err := s.view(ctx, func(tx *bbolt.Tx) error {
			c := tx.Bucket(bucket).Cursor()
			k, v := c.First()
			if after != nil {
				if k, v = c.Seek(after); k != nil && bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			var last []byte // valid inside this transaction only
			for examined := 0; ; k, v = c.Next() {
				if k == nil {
					done = true
					return nil
				}
				if examined == scanChunk || len(candidates) == sweepChunk {
					after = bytes.Clone(last)
					return nil
				}
				examined++
				last = k
				if expired(k, v) {
					candidates = append(candidates, bytes.Clone(k))
				}
			}
		})
		if err != nil {
			return total, err
		}
		if len(candidates) == 0 {
			continue
		}
		n := 0
		err = s.update(ctx, func(tx *bbolt.Tx) error {
			b := tx.Bucket(bucket)
			for _, k := range candidates {
				if v := b.Get(k); v == nil || !expired(k, v) {
					continue
				}
				if err := del(tx, k); err != nil {
					return err
				}
				n++
			}
			if n == 0 {
				return errNoWrite
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}
