package bolt

import (
	"bytes"
	"context"
	"fmt"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
)

// maxCredentialIDLen is WebAuthn's bound on a credential id (§5.8.3: at
// most 1023 bytes); a longer one names nothing.
const maxCredentialIDLen = 1023

// AddPasskey stores p with its credential index entry; see storage.FactorStore.
func (s *Store) AddPasskey(ctx context.Context, p storage.Passkey, firstRecovery []storage.Hash) (bool, error) {
	switch {
	case !validUserID(p.UserID) || p.ID == "" || len(p.ID) > maxFactorIDLen:
		return false, errInvalid("passkey: user id or factor id")
	case len(p.CredentialID) == 0 || len(p.CredentialID) > maxCredentialIDLen:
		return false, errInvalid("passkey: credential id of %d bytes", len(p.CredentialID))
	case len(p.Transports) > maxTransports:
		return false, errInvalid("passkey: %d transports", len(p.Transports))
	}
	var first bool
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		if _, err := getUser(tx, p.UserID); err != nil {
			return err
		}
		index := tx.Bucket(bucketPasskeyIDs)
		if index.Get(p.CredentialID) != nil {
			return fmt.Errorf("storage/bolt: add passkey: %w", storage.ErrPasskeyInUse)
		}
		k := factorKey(p.UserID, p.ID)
		if tx.Bucket(bucketFactors).Get(k) != nil {
			return errInvalid("passkey: factor id %s exists", p.ID)
		}
		had, err := hasSecondFactor(tx, p.UserID)
		if err != nil {
			return err
		}
		if err := tx.Bucket(bucketFactors).Put(k, encodePasskey(p)); err != nil {
			return err
		}
		if err := index.Put(p.CredentialID, k); err != nil {
			return err
		}
		if first = !had; first {
			return replaceRecoveryCodes(tx, p.UserID, firstRecovery)
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return first, nil
}

// PasskeyByCredentialID returns the passkey through the credential index.
func (s *Store) PasskeyByCredentialID(ctx context.Context, credentialID []byte) (storage.Passkey, error) {
	if len(credentialID) == 0 || len(credentialID) > maxCredentialIDLen {
		return storage.Passkey{}, notFound("passkey")
	}
	var p storage.Passkey
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		_, v := passkeyRecord(tx, credentialID)
		if v == nil {
			return notFound("passkey")
		}
		var err error
		p, err = decodePasskey(v)
		return err
	})
	return p, err
}

// passkeyRecord returns the factor key and value of the credential, or nils.
func passkeyRecord(tx *bbolt.Tx, credentialID []byte) (key, value []byte) {
	k := tx.Bucket(bucketPasskeyIDs).Get(credentialID)
	if k == nil {
		return nil, nil
	}
	return k, tx.Bucket(bucketFactors).Get(k)
}

// RecordPasskeyUse checks and advances the signature counter and records
// the flags and time of the use, in one transaction.
func (s *Store) RecordPasskeyUse(ctx context.Context, userID string, credentialID []byte, use storage.PasskeyUse) error {
	if !validUserID(userID) || len(credentialID) == 0 || len(credentialID) > maxCredentialIDLen {
		return notFound("passkey")
	}
	return s.update(ctx, func(tx *bbolt.Tx) error {
		k, v := passkeyRecord(tx, credentialID)
		if v == nil {
			return notFound("passkey")
		}
		p, err := decodePasskey(v)
		if err != nil {
			return err
		}
		if p.UserID != userID {
			return notFound("passkey")
		}
		if (use.SignCount != 0 || p.SignCount != 0) && use.SignCount <= p.SignCount {
			return fmt.Errorf("storage/bolt: passkey use: counter %d, stored %d: %w", use.SignCount, p.SignCount, storage.ErrPasskeySignCount)
		}
		p.SignCount = use.SignCount
		p.UserVerified = p.UserVerified || use.UserVerified
		p.BackupState = use.BackupState
		p.LastUsedAt = use.At
		return tx.Bucket(bucketFactors).Put(bytes.Clone(k), encodePasskey(p))
	})
}
