package bolt

import (
	"bytes"
	"context"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
)

// Second-factor steps and WebAuthn ceremonies: short-lived records keyed by
// the hash of a browser's cookie, each with an expiry index like the OAuth
// flows (oauth.go).

// expiring is one kind of such record: its bucket, its expiry index, and
// how to read a value's expiry.
type expiring struct {
	what      string
	records   []byte
	expiry    []byte
	expiresAt func(h storage.Hash, v []byte) (time.Time, error)
}

var (
	stepKind = expiring{what: "second-factor step", records: bucketFactorSteps, expiry: bucketStepExpiry,
		expiresAt: func(h storage.Hash, v []byte) (time.Time, error) {
			st, err := decodeSecondFactorStep(h, v)
			return st.ExpiresAt, err
		}}
	ceremonyKind = expiring{what: "webauthn ceremony", records: bucketCeremonies, expiry: bucketCeremonyExp,
		expiresAt: func(h storage.Hash, v []byte) (time.Time, error) {
			c, err := decodeWebAuthnCeremony(h, v)
			return c.ExpiresAt, err
		}}
)

// put stores value under h with its expiry entry, replacing what was there.
func (k expiring) put(tx *bbolt.Tx, h storage.Hash, value []byte, expires time.Time) error {
	if _, err := k.delete(tx, h); err != nil {
		return err
	}
	if err := tx.Bucket(k.records).Put(h[:], value); err != nil {
		return err
	}
	return tx.Bucket(k.expiry).Put(expiryKey(expires, h), nil)
}

// delete deletes the record under h with its expiry entry and reports
// whether there was one.
func (k expiring) delete(tx *bbolt.Tx, h storage.Hash) (bool, error) {
	b := tx.Bucket(k.records)
	v := b.Get(h[:])
	if v == nil {
		return false, nil
	}
	expires, err := k.expiresAt(h, v)
	if err != nil {
		return false, err
	}
	if err := tx.Bucket(k.expiry).Delete(expiryKey(expires, h)); err != nil {
		return false, err
	}
	return true, b.Delete(h[:])
}

// take deletes the record under h and returns a copy of its value; nil
// when there is none (nothing is written then).
func (s *Store) take(ctx context.Context, k expiring, h storage.Hash) ([]byte, error) {
	var value []byte
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		v := tx.Bucket(k.records).Get(h[:])
		if v == nil {
			return errNoWrite
		}
		value = bytes.Clone(v)
		_, err := k.delete(tx, h)
		return err
	})
	return value, err
}

// CreateSecondFactorStep stores st under st.BrowserHash.
func (s *Store) CreateSecondFactorStep(ctx context.Context, st storage.SecondFactorStep) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		if _, err := getUser(tx, st.UserID); err != nil {
			return err
		}
		return stepKind.put(tx, st.BrowserHash, encodeSecondFactorStep(st), st.ExpiresAt)
	})
}

// SecondFactorStep returns the step without taking it.
func (s *Store) SecondFactorStep(ctx context.Context, browserHash storage.Hash, now time.Time) (storage.SecondFactorStep, error) {
	var st storage.SecondFactorStep
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketFactorSteps).Get(browserHash[:])
		if v == nil {
			return notFound("second-factor step")
		}
		var err error
		st, err = decodeSecondFactorStep(browserHash, v)
		return err
	})
	switch {
	case err != nil:
		return storage.SecondFactorStep{}, err
	case !now.Before(st.ExpiresAt):
		return storage.SecondFactorStep{}, notFound("second-factor step")
	}
	return st, nil
}

// TakeSecondFactorStep deletes and returns the step: single use.
func (s *Store) TakeSecondFactorStep(ctx context.Context, browserHash storage.Hash, now time.Time) (storage.SecondFactorStep, error) {
	v, err := s.take(ctx, stepKind, browserHash)
	if err != nil || v == nil {
		return storage.SecondFactorStep{}, orNotFound(err, "second-factor step")
	}
	st, err := decodeSecondFactorStep(browserHash, v)
	switch {
	case err != nil:
		return storage.SecondFactorStep{}, err
	case !now.Before(st.ExpiresAt):
		return storage.SecondFactorStep{}, notFound("second-factor step")
	}
	return st, nil
}

// CreateWebAuthnCeremony stores c under c.BrowserHash.
func (s *Store) CreateWebAuthnCeremony(ctx context.Context, c storage.WebAuthnCeremony) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		return ceremonyKind.put(tx, c.BrowserHash, encodeWebAuthnCeremony(c), c.ExpiresAt)
	})
}

// TakeWebAuthnCeremony deletes and returns the ceremony: single use.
func (s *Store) TakeWebAuthnCeremony(ctx context.Context, browserHash storage.Hash, now time.Time) (storage.WebAuthnCeremony, error) {
	v, err := s.take(ctx, ceremonyKind, browserHash)
	if err != nil || v == nil {
		return storage.WebAuthnCeremony{}, orNotFound(err, "webauthn ceremony")
	}
	c, err := decodeWebAuthnCeremony(browserHash, v)
	switch {
	case err != nil:
		return storage.WebAuthnCeremony{}, err
	case !now.Before(c.ExpiresAt):
		return storage.WebAuthnCeremony{}, notFound("webauthn ceremony")
	}
	return c, nil
}

// orNotFound is err, or storage.ErrNotFound about what when err is nil.
func orNotFound(err error, what string) error {
	if err != nil {
		return err
	}
	return notFound(what)
}

// DeleteExpiredFactorRecords sweeps expired steps, ceremonies and pending
// TOTP factors through their expiry indexes, in chunks (see sweepChunk).
func (s *Store) DeleteExpiredFactorRecords(ctx context.Context, now time.Time) (int, error) {
	total := 0
	for _, k := range []expiring{stepKind, ceremonyKind} {
		n, err := s.sweepExpiryIndex(ctx, k.expiry, now, k.delete)
		total += n
		if err != nil {
			return total, err
		}
	}
	n, err := s.sweepPendingTOTP(ctx, now)
	return total + n, err
}

// sweepPendingTOTP deletes pending TOTP factors expired at now.
func (s *Store) sweepPendingTOTP(ctx context.Context, now time.Time) (int, error) {
	nowKey := make([]byte, timeKeySize)
	putSortableTime(nowKey, now)
	total := 0
	for {
		n, keys := 0, 0
		err := s.update(ctx, func(tx *bbolt.Tx) error {
			index := tx.Bucket(bucketPendingExpiry)
			var expired [][]byte
			c := index.Cursor()
			for k, _ := c.First(); k != nil && len(expired) < sweepChunk; k, _ = c.Next() {
				if len(k) < timeKeySize || bytes.Compare(k[:timeKeySize], nowKey) > 0 {
					break
				}
				expired = append(expired, bytes.Clone(k))
			}
			if keys = len(expired); keys == 0 {
				return errNoWrite
			}
			factors := tx.Bucket(bucketFactors)
			for _, k := range expired {
				if err := index.Delete(k); err != nil {
					return err
				}
				fk := k[timeKeySize:]
				v := factors.Get(fk)
				if v == nil {
					continue
				}
				if f, err := decodeTOTPFactor(v); err != nil || f.Confirmed {
					continue // a stale entry: the factor is not a pending TOTP factor
				}
				if err := factors.Delete(fk); err != nil {
					return err
				}
				n++
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
