package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/jackc/pgx/v5"
)

const passkeyColumns = `id, user_id, name, credential_id, public_key, attestation_type, attestation_format, aaguid,
	sign_count, transports, user_verified, backup_eligible, backup_state, user_handle, created_at, last_used_at`

func scanPasskey(row pgx.Row) (storage.Passkey, error) {
	var (
		p        storage.Passkey
		count    int64
		lastUsed *time.Time
	)
	err := row.Scan(&p.ID, &p.UserID, &p.Name, &p.CredentialID, &p.PublicKey, &p.AttestationType, &p.AttestationFormat,
		&p.AAGUID, &count, &p.Transports, &p.UserVerified, &p.BackupEligible, &p.BackupState, &p.UserHandle,
		&p.CreatedAt, &lastUsed)
	p.SignCount = uint32(count)
	if lastUsed != nil {
		p.LastUsedAt = *lastUsed
	}
	return p, err
}

// AddPasskey stores p; the first second factor of the user also gets
// firstRecovery as its recovery codes.
func (s *Store) AddPasskey(ctx context.Context, p storage.Passkey, firstRecovery []storage.Hash) (bool, error) {
	if len(p.CredentialID) == 0 {
		return false, fmt.Errorf("storage/postgres: add passkey: empty credential id")
	}
	var first bool
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := lockUser(ctx, tx, p.UserID); err != nil {
			return err
		}
		had, err := hasSecondFactor(ctx, tx, p.UserID)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "INSERT INTO passkeys ("+passkeyColumns+`) VALUES
			($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
			p.ID, p.UserID, p.Name, p.CredentialID, nonNil(p.PublicKey), p.AttestationType, p.AttestationFormat,
			nonNil(p.AAGUID), int64(p.SignCount), nonNil(p.Transports), p.UserVerified, p.BackupEligible, p.BackupState,
			nonNil(p.UserHandle), p.CreatedAt, nullTime(p.LastUsedAt))
		if isUnique(err, "passkeys_credential_id_key") {
			return fmt.Errorf("storage/postgres: add passkey: %w", storage.ErrPasskeyInUse)
		}
		if err != nil {
			return wrap("add passkey", err)
		}
		if first = !had; first {
			return replaceRecoveryCodes(ctx, tx, p.UserID, firstRecovery)
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return first, nil
}

// PasskeyByCredentialID returns the passkey of that credential id.
func (s *Store) PasskeyByCredentialID(ctx context.Context, credentialID []byte) (storage.Passkey, error) {
	p, err := scanPasskey(s.pool.QueryRow(ctx, "SELECT "+passkeyColumns+" FROM passkeys WHERE credential_id = $1", credentialID))
	if err != nil {
		return storage.Passkey{}, wrap("passkey", err)
	}
	return p, nil
}

// RecordPasskeyUse checks and advances the signature counter in one
// statement: a concurrent use with the same counter finds the condition
// false once the first has written.
func (s *Store) RecordPasskeyUse(ctx context.Context, userID string, credentialID []byte, use storage.PasskeyUse) error {
	tag, err := s.pool.Exec(ctx, `UPDATE passkeys SET sign_count = $3, user_verified = user_verified OR $4,
		backup_state = $5, last_used_at = $6
		WHERE credential_id = $1 AND user_id = $2 AND ($3 > sign_count OR ($3 = 0 AND sign_count = 0))`,
		credentialID, userID, int64(use.SignCount), use.UserVerified, use.BackupState, use.At)
	if err != nil {
		return wrap("record passkey use", err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	p, err := s.PasskeyByCredentialID(ctx, credentialID)
	if err != nil {
		return err
	}
	if p.UserID != userID {
		return notFound("passkey")
	}
	return fmt.Errorf("storage/postgres: passkey use: counter %d, stored %d: %w", use.SignCount, p.SignCount, storage.ErrPasskeySignCount)
}
