package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/jackc/pgx/v5"
)

// Second factors (storage.FactorStore). A change that decides on "the
// user's first second factor" (confirming a TOTP factor, adding a passkey,
// removing a factor, replacing the recovery codes) runs in a transaction
// that first locks the user's row, so two of them for one user never judge
// from the same state. The TOTP step and the recovery codes are each
// checked and changed in one statement.

const totpColumns = "id, user_id, name, secret, confirmed, created_at, expires_at"

func scanTOTPFactor(row pgx.Row) (storage.TOTPFactor, error) {
	var (
		f       storage.TOTPFactor
		expires *time.Time
	)
	err := row.Scan(&f.ID, &f.UserID, &f.Name, &f.Secret, &f.Confirmed, &f.CreatedAt, &expires)
	if expires != nil {
		f.ExpiresAt = *expires
	}
	return f, err
}

// nullTime is t, or SQL NULL for the zero time.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// SecondFactors returns the user's factors and how many recovery codes are
// left, in one round trip.
func (s *Store) SecondFactors(ctx context.Context, userID string) (storage.SecondFactors, error) {
	var out storage.SecondFactors
	batch := &pgx.Batch{}
	batch.Queue("SELECT "+totpColumns+" FROM totp_factors WHERE user_id = $1 ORDER BY created_at, id", userID).Query(
		func(rows pgx.Rows) error {
			var err error
			out.TOTP, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (storage.TOTPFactor, error) {
				return scanTOTPFactor(row)
			})
			return err
		})
	batch.Queue("SELECT "+passkeyColumns+" FROM passkeys WHERE user_id = $1 ORDER BY created_at, id", userID).Query(
		func(rows pgx.Rows) error {
			var err error
			out.Passkeys, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (storage.Passkey, error) {
				return scanPasskey(row)
			})
			return err
		})
	batch.Queue("SELECT count(*) FROM recovery_codes WHERE user_id = $1", userID).QueryRow(
		func(row pgx.Row) error { return row.Scan(&out.RecoveryCodesLeft) })
	if err := s.pool.SendBatch(ctx, batch).Close(); err != nil {
		return storage.SecondFactors{}, wrap("second factors", err)
	}
	return out, nil
}

// hasSecondFactor reports, inside tx, whether the user has a confirmed TOTP
// factor or a passkey.
func hasSecondFactor(ctx context.Context, tx pgx.Tx, userID string) (bool, error) {
	var has bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM totp_factors WHERE user_id = $1 AND confirmed)
		OR EXISTS (SELECT 1 FROM passkeys WHERE user_id = $1)`, userID).Scan(&has)
	return has, wrap2("has second factor", err)
}

// AddPendingTOTP stores f as pending and deletes the user's other pending factors.
func (s *Store) AddPendingTOTP(ctx context.Context, f storage.TOTPFactor) error {
	if f.Confirmed {
		return errors.New("storage/postgres: AddPendingTOTP of a confirmed factor")
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := lockUser(ctx, tx, f.UserID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "DELETE FROM totp_factors WHERE user_id = $1 AND NOT confirmed", f.UserID); err != nil {
			return wrap("add pending totp", err)
		}
		_, err := tx.Exec(ctx, "INSERT INTO totp_factors ("+totpColumns+") VALUES ($1, $2, $3, $4, false, $5, $6)",
			f.ID, f.UserID, f.Name, nonNil(f.Secret), f.CreatedAt, f.ExpiresAt)
		return wrap2("add pending totp", err)
	})
}

// ConfirmTOTP confirms the pending factor and accepts step, in one transaction.
func (s *Store) ConfirmTOTP(ctx context.Context, userID, factorID string, step int64, now time.Time, firstRecovery []storage.Hash) (bool, error) {
	var first bool
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := lockUser(ctx, tx, userID); err != nil {
			return err
		}
		var expires time.Time
		err := tx.QueryRow(ctx, `SELECT expires_at FROM totp_factors
			WHERE id = $1 AND user_id = $2 AND NOT confirmed`, factorID, userID).Scan(&expires)
		if err != nil {
			return wrap("pending totp factor", err)
		}
		if !now.Before(expires) {
			return notFound("pending totp factor")
		}
		if err := acceptStep(ctx, tx, userID, step); err != nil {
			return err
		}
		had, err := hasSecondFactor(ctx, tx, userID)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "UPDATE totp_factors SET confirmed = true, expires_at = NULL WHERE id = $1", factorID); err != nil {
			return wrap("confirm totp", err)
		}
		if first = !had; first {
			return replaceRecoveryCodes(ctx, tx, userID, firstRecovery)
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return first, nil
}

// acceptStep records step as the user's last accepted TOTP step, or fails
// with storage.ErrTOTPStepUsed when it is not past the last one. The insert
// or update is one statement: a concurrent caller with the same step waits
// for the row and then finds its condition false.
func acceptStep(ctx context.Context, tx pgx.Tx, userID string, step int64) error {
	tag, err := tx.Exec(ctx, `INSERT INTO totp_steps (user_id, step) VALUES ($1, $2)
		ON CONFLICT (user_id) DO UPDATE SET step = EXCLUDED.step WHERE totp_steps.step < EXCLUDED.step`, userID, step)
	if err != nil {
		return wrap("accept totp step", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("storage/postgres: totp step %d: %w", step, storage.ErrTOTPStepUsed)
	}
	return nil
}

// AcceptTOTPStep accepts step for the user's confirmed factor if it is
// past the last accepted step: one statement.
func (s *Store) AcceptTOTPStep(ctx context.Context, userID, factorID string, step int64) error {
	var factors, accepted int
	err := s.pool.QueryRow(ctx, `WITH f AS (
			SELECT 1 FROM totp_factors WHERE id = $2 AND user_id = $1 AND confirmed FOR SHARE
		), up AS (
			INSERT INTO totp_steps (user_id, step) SELECT $1, $3 FROM f
			ON CONFLICT (user_id) DO UPDATE SET step = EXCLUDED.step WHERE totp_steps.step < EXCLUDED.step
			RETURNING 1
		) SELECT (SELECT count(*) FROM f), (SELECT count(*) FROM up)`, userID, factorID, step).Scan(&factors, &accepted)
	switch {
	case err != nil:
		return wrap("accept totp step", err)
	case factors == 0:
		return notFound("totp factor")
	case accepted == 0:
		return fmt.Errorf("storage/postgres: totp step %d: %w", step, storage.ErrTOTPStepUsed)
	}
	return nil
}

// RemoveFactor deletes the user's factor; with no second factor left, the
// recovery codes go too.
func (s *Store) RemoveFactor(ctx context.Context, userID, factorID string) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := lockUser(ctx, tx, userID); err != nil {
			return err
		}
		var removed int64
		for _, sql := range []string{
			"DELETE FROM totp_factors WHERE id = $1 AND user_id = $2",
			"DELETE FROM passkeys WHERE id = $1 AND user_id = $2",
		} {
			tag, err := tx.Exec(ctx, sql, factorID, userID)
			if err != nil {
				return wrap("remove factor", err)
			}
			removed += tag.RowsAffected()
		}
		if removed == 0 {
			return notFound("factor")
		}
		has, err := hasSecondFactor(ctx, tx, userID)
		if err != nil || has {
			return err
		}
		return replaceRecoveryCodes(ctx, tx, userID, nil)
	})
}

// ReplaceRecoveryCodes voids the user's codes and stores the new set.
func (s *Store) ReplaceRecoveryCodes(ctx context.Context, userID string, codes []storage.Hash) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := lockUser(ctx, tx, userID); err != nil {
			return err
		}
		has, err := hasSecondFactor(ctx, tx, userID)
		if err != nil {
			return err
		}
		if !has {
			return fmt.Errorf("storage/postgres: recovery codes: %w", storage.ErrNoSecondFactor)
		}
		return replaceRecoveryCodes(ctx, tx, userID, codes)
	})
}

// replaceRecoveryCodes deletes the user's codes and inserts codes, inside tx.
func replaceRecoveryCodes(ctx context.Context, tx pgx.Tx, userID string, codes []storage.Hash) error {
	if _, err := tx.Exec(ctx, "DELETE FROM recovery_codes WHERE user_id = $1", userID); err != nil {
		return wrap("recovery codes", err)
	}
	if len(codes) == 0 {
		return nil
	}
	hashes := make([][]byte, len(codes))
	for i := range codes {
		hashes[i] = codes[i][:]
	}
	_, err := tx.Exec(ctx, `INSERT INTO recovery_codes (user_id, code_hash)
		SELECT $1, h FROM unnest($2::bytea[]) AS h ON CONFLICT DO NOTHING`, userID, hashes)
	return wrap2("recovery codes", err)
}

// UseRecoveryCode consumes one of the user's codes in one statement and
// reports how many are left.
func (s *Store) UseRecoveryCode(ctx context.Context, userID string, code storage.Hash) (int, error) {
	var used, before int
	err := s.pool.QueryRow(ctx, `WITH used AS (
			DELETE FROM recovery_codes WHERE user_id = $1 AND code_hash = $2 RETURNING 1
		) SELECT (SELECT count(*) FROM used), (SELECT count(*) FROM recovery_codes WHERE user_id = $1)`,
		userID, code[:]).Scan(&used, &before)
	switch {
	case err != nil:
		return 0, wrap("use recovery code", err)
	case used == 0:
		return 0, notFound("recovery code")
	}
	// Both counts see the codes as they were before the delete.
	return max(before-1, 0), nil
}

// ResetSecondFactor removes every factor and recovery code of the user.
func (s *Store) ResetSecondFactor(ctx context.Context, userID string) (int, error) {
	var n int
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := lockUser(ctx, tx, userID); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `WITH t AS (
				DELETE FROM totp_factors WHERE user_id = $1 RETURNING confirmed
			), p AS (
				DELETE FROM passkeys WHERE user_id = $1 RETURNING 1
			) SELECT (SELECT count(*) FROM t WHERE confirmed) + (SELECT count(*) FROM p)`, userID).Scan(&n)
		if err != nil {
			return wrap("reset second factor", err)
		}
		return replaceRecoveryCodes(ctx, tx, userID, nil)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// nonNil is b, or an empty slice for nil: pgx writes a nil slice as NULL.
func nonNil[T any](b []T) []T {
	if b == nil {
		return []T{}
	}
	return b
}
