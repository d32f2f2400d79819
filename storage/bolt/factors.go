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

// Buckets of the second factors (storage.FactorStore).
var (
	bucketFactors       = []byte("factors")             // user prefix + factor id → TOTP factor or passkey
	bucketPasskeyIDs    = []byte("passkey_credentials") // credential id → factor key
	bucketTOTPSteps     = []byte("totp_steps")          // user id → last accepted step, 8 bytes
	bucketRecoveryCodes = []byte("recovery_codes")      // user prefix + code hash → empty
	bucketPendingExpiry = []byte("pending_totp_expiry") // sortable expiry + factor key → empty
	bucketFactorSteps   = []byte("second_factor_steps") // browser hash → second-factor step
	bucketStepExpiry    = []byte("second_factor_step_expiry")
	bucketCeremonies    = []byte("webauthn_ceremonies") // browser hash → WebAuthn ceremony
	bucketCeremonyExp   = []byte("webauthn_ceremony_expiry")
)

// maxFactorIDLen bounds a factor id: longer ones (from a URL) name nothing.
const maxFactorIDLen = 64

// factorKey is the key of the user's factor id.
func factorKey(userID, factorID string) []byte {
	return append(userPrefix(userID), factorID...)
}

// SecondFactors returns the user's factors and unused recovery codes, in
// one read transaction: a prefix scan of the factors and one of the codes.
func (s *Store) SecondFactors(ctx context.Context, userID string) (storage.SecondFactors, error) {
	var out storage.SecondFactors
	if !validUserID(userID) {
		return out, nil
	}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		out, err = userFactors(tx, userID)
		return err
	})
	return out, err
}

// userFactors reads the user's factors and counts the recovery codes.
func userFactors(tx *bbolt.Tx, userID string) (storage.SecondFactors, error) {
	var out storage.SecondFactors
	prefix := userPrefix(userID)
	c := tx.Bucket(bucketFactors).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		typ, err := factorType(v)
		if err != nil {
			return out, err
		}
		switch typ {
		case storage.FactorTOTP:
			f, err := decodeTOTPFactor(v)
			if err != nil {
				return out, err
			}
			out.TOTP = append(out.TOTP, f)
		case storage.FactorPasskey:
			p, err := decodePasskey(v)
			if err != nil {
				return out, err
			}
			out.Passkeys = append(out.Passkeys, p)
		default:
			return out, fmt.Errorf("factor type %q: %w", typ, errCorrupt)
		}
	}
	slices.SortFunc(out.TOTP, func(a, b storage.TOTPFactor) int {
		return cmpCreated(a.CreatedAt, b.CreatedAt, a.ID, b.ID)
	})
	slices.SortFunc(out.Passkeys, func(a, b storage.Passkey) int {
		return cmpCreated(a.CreatedAt, b.CreatedAt, a.ID, b.ID)
	})
	out.RecoveryCodesLeft = len(hashKeysWithPrefix(tx.Bucket(bucketRecoveryCodes), prefix))
	return out, nil
}

// cmpCreated orders records oldest first, then by id.
func cmpCreated(a, b time.Time, idA, idB string) int {
	if c := a.Compare(b); c != 0 {
		return c
	}
	switch {
	case idA < idB:
		return -1
	case idA > idB:
		return 1
	}
	return 0
}

// hasSecondFactor reports whether the user has a confirmed TOTP factor or a passkey.
func hasSecondFactor(tx *bbolt.Tx, userID string) (bool, error) {
	f, err := userFactors(tx, userID)
	return f.Enrolled(), err
}

// AddPendingTOTP stores f as pending, with its expiry index entry, and
// deletes the user's other pending TOTP factors.
func (s *Store) AddPendingTOTP(ctx context.Context, f storage.TOTPFactor) error {
	if !validUserID(f.UserID) || f.ID == "" || len(f.ID) > maxFactorIDLen {
		return errInvalid("totp factor: user id or factor id")
	}
	if f.Confirmed {
		return errInvalid("totp factor: AddPendingTOTP of a confirmed factor")
	}
	return s.update(ctx, func(tx *bbolt.Tx) error {
		if _, err := getUser(tx, f.UserID); err != nil {
			return err
		}
		have, err := userFactors(tx, f.UserID)
		if err != nil {
			return err
		}
		for _, old := range have.TOTP {
			if !old.Confirmed {
				if err := deleteFactor(tx, f.UserID, old.ID); err != nil {
					return err
				}
			}
		}
		k := factorKey(f.UserID, f.ID)
		if tx.Bucket(bucketFactors).Get(k) != nil {
			return errInvalid("totp factor: id %s exists", f.ID)
		}
		if err := tx.Bucket(bucketFactors).Put(k, encodeTOTPFactor(f)); err != nil {
			return err
		}
		return tx.Bucket(bucketPendingExpiry).Put(pendingExpiryKey(f.ExpiresAt, k), nil)
	})
}

// pendingExpiryKey is the expiry index key of a pending TOTP factor.
func pendingExpiryKey(t time.Time, factorKey []byte) []byte {
	k := make([]byte, timeKeySize, timeKeySize+len(factorKey))
	putSortableTime(k, t)
	return append(k, factorKey...)
}

// ConfirmTOTP confirms the pending factor and accepts step, in one
// transaction; see storage.FactorStore.
func (s *Store) ConfirmTOTP(ctx context.Context, userID, factorID string, step int64, now time.Time, firstRecovery []storage.Hash) (bool, error) {
	if !validUserID(userID) || len(factorID) > maxFactorIDLen {
		return false, notFound("pending totp factor")
	}
	var first bool
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		k := factorKey(userID, factorID)
		v := tx.Bucket(bucketFactors).Get(k)
		if v == nil {
			return notFound("pending totp factor")
		}
		if typ, err := factorType(v); err != nil || typ != storage.FactorTOTP {
			return notFound("pending totp factor")
		}
		f, err := decodeTOTPFactor(v)
		if err != nil {
			return err
		}
		if f.Confirmed || !now.Before(f.ExpiresAt) {
			return notFound("pending totp factor")
		}
		if err := acceptStep(tx, userID, step); err != nil {
			return err
		}
		had, err := hasSecondFactor(tx, userID)
		if err != nil {
			return err
		}
		if err := tx.Bucket(bucketPendingExpiry).Delete(pendingExpiryKey(f.ExpiresAt, k)); err != nil {
			return err
		}
		f.Confirmed, f.ExpiresAt = true, time.Time{}
		if err := tx.Bucket(bucketFactors).Put(k, encodeTOTPFactor(f)); err != nil {
			return err
		}
		if first = !had; first {
			return replaceRecoveryCodes(tx, userID, firstRecovery)
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return first, nil
}

// AcceptTOTPStep accepts step for the user's confirmed factor if it is
// past the last accepted step. bbolt has one writer at a time, so the
// check and the write are one step for every concurrent caller.
func (s *Store) AcceptTOTPStep(ctx context.Context, userID, factorID string, step int64) error {
	if !validUserID(userID) || len(factorID) > maxFactorIDLen {
		return notFound("totp factor")
	}
	return s.update(ctx, func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketFactors).Get(factorKey(userID, factorID))
		if v == nil {
			return notFound("totp factor")
		}
		if typ, err := factorType(v); err != nil || typ != storage.FactorTOTP {
			return notFound("totp factor")
		}
		f, err := decodeTOTPFactor(v)
		if err != nil {
			return err
		}
		if !f.Confirmed {
			return notFound("totp factor")
		}
		return acceptStep(tx, userID, step)
	})
}

// acceptStep records step as the user's last accepted TOTP step, or fails
// with storage.ErrTOTPStepUsed when it is not past the last one.
func acceptStep(tx *bbolt.Tx, userID string, step int64) error {
	b := tx.Bucket(bucketTOTPSteps)
	if v := b.Get([]byte(userID)); len(v) == 8 && step <= int64(binary.BigEndian.Uint64(v)) {
		return fmt.Errorf("storage/bolt: totp step %d: %w", step, storage.ErrTOTPStepUsed)
	}
	return b.Put([]byte(userID), binary.BigEndian.AppendUint64(nil, uint64(step)))
}

// RemoveFactor deletes the user's factor; with no second factor left, the
// recovery codes go too.
func (s *Store) RemoveFactor(ctx context.Context, userID, factorID string) error {
	if !validUserID(userID) || factorID == "" || len(factorID) > maxFactorIDLen {
		return notFound("factor")
	}
	return s.update(ctx, func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketFactors).Get(factorKey(userID, factorID)) == nil {
			return notFound("factor")
		}
		if err := deleteFactor(tx, userID, factorID); err != nil {
			return err
		}
		left, err := hasSecondFactor(tx, userID)
		if err != nil || left {
			return err
		}
		return replaceRecoveryCodes(tx, userID, nil)
	})
}

// deleteFactor deletes the user's factor and its index entries.
func deleteFactor(tx *bbolt.Tx, userID, factorID string) error {
	k := factorKey(userID, factorID)
	factors := tx.Bucket(bucketFactors)
	v := factors.Get(k)
	if v == nil {
		return nil
	}
	typ, err := factorType(v)
	if err != nil {
		return err
	}
	switch typ {
	case storage.FactorTOTP:
		f, err := decodeTOTPFactor(v)
		if err != nil {
			return err
		}
		if !f.Confirmed {
			if err := tx.Bucket(bucketPendingExpiry).Delete(pendingExpiryKey(f.ExpiresAt, k)); err != nil {
				return err
			}
		}
	case storage.FactorPasskey:
		p, err := decodePasskey(v)
		if err != nil {
			return err
		}
		if err := tx.Bucket(bucketPasskeyIDs).Delete(p.CredentialID); err != nil {
			return err
		}
	}
	return factors.Delete(k)
}

// ReplaceRecoveryCodes voids the user's codes and stores the new set.
func (s *Store) ReplaceRecoveryCodes(ctx context.Context, userID string, codes []storage.Hash) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		if _, err := getUser(tx, userID); err != nil {
			return err
		}
		has, err := hasSecondFactor(tx, userID)
		if err != nil {
			return err
		}
		if !has {
			return fmt.Errorf("storage/bolt: recovery codes: %w", storage.ErrNoSecondFactor)
		}
		return replaceRecoveryCodes(tx, userID, codes)
	})
}

// replaceRecoveryCodes deletes the user's recovery codes and stores codes.
func replaceRecoveryCodes(tx *bbolt.Tx, userID string, codes []storage.Hash) error {
	b := tx.Bucket(bucketRecoveryCodes)
	for _, h := range hashKeysWithPrefix(b, userPrefix(userID)) {
		if err := b.Delete(userHashKey(userID, h)); err != nil {
			return err
		}
	}
	for _, h := range codes {
		if err := b.Put(userHashKey(userID, h), nil); err != nil {
			return err
		}
	}
	return nil
}

// UseRecoveryCode consumes one of the user's codes and reports how many are left.
func (s *Store) UseRecoveryCode(ctx context.Context, userID string, code storage.Hash) (int, error) {
	if !validUserID(userID) {
		return 0, notFound("recovery code")
	}
	var left int
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketRecoveryCodes)
		k := userHashKey(userID, code)
		if b.Get(k) == nil {
			return notFound("recovery code")
		}
		if err := b.Delete(k); err != nil {
			return err
		}
		left = len(hashKeysWithPrefix(b, userPrefix(userID)))
		return nil
	})
	if err != nil {
		return 0, err
	}
	return left, nil
}

// ResetSecondFactor removes every factor and recovery code of the user.
func (s *Store) ResetSecondFactor(ctx context.Context, userID string) (int, error) {
	var n int
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		if _, err := getUser(tx, userID); err != nil {
			return err
		}
		var err error
		n, err = deleteUserFactors(tx, userID)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// deleteUserFactors deletes every factor and recovery code of the user and
// reports how many second factors (confirmed TOTP factors and passkeys)
// went. DeleteUser calls it too, and then also drops the user's last step.
func deleteUserFactors(tx *bbolt.Tx, userID string) (int, error) {
	have, err := userFactors(tx, userID)
	if err != nil {
		return 0, err
	}
	n := len(have.Passkeys)
	for _, f := range have.TOTP {
		if f.Confirmed {
			n++
		}
		if err := deleteFactor(tx, userID, f.ID); err != nil {
			return 0, err
		}
	}
	for _, p := range have.Passkeys {
		if err := deleteFactor(tx, userID, p.ID); err != nil {
			return 0, err
		}
	}
	return n, replaceRecoveryCodes(tx, userID, nil)
}

// deleteUserSecondFactors is DeleteUser's part: every factor, recovery
// code and the last accepted TOTP step of the user.
func deleteUserSecondFactors(tx *bbolt.Tx, userID string) error {
	if _, err := deleteUserFactors(tx, userID); err != nil {
		return err
	}
	return tx.Bucket(bucketTOTPSteps).Delete([]byte(userID))
}
