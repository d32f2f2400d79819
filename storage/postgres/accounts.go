package postgres

import (
	"context"
	"fmt"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/jackc/pgx/v5"
)

// Administration of accounts: disable, delete, and the compare-and-swap of
// a password hash upgraded at sign-in (issue 10's credential epoch, with
// CreateSession's check and the bumps in sessions.go, users.go, reset.go).

// SetUserDisabled sets the user's Disabled flag. Disabling also deletes
// (and notifies) every session of the user, voids the user's reset and
// invitation tokens (enabling revives none) and bumps the user's Epoch, in the same transaction; it reports the
// sessions deleted. Unknown user: storage.ErrNotFound.
func (s *Store) SetUserDisabled(ctx context.Context, userID string, disabled bool) (int, error) {
	var n int
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := lockUser(ctx, tx, userID); err != nil {
			return err
		}
		if !disabled {
			if _, err := tx.Exec(ctx, "UPDATE users SET disabled = false WHERE id = $1", userID); err != nil {
				return wrap("enable user", err)
			}
			// Replicas forget what they cached of the user: its API
			// tokens were cached with their owner disabled.
			return wrap2("enable user", notifyUser(ctx, tx, userID))
		}
		if _, err := tx.Exec(ctx, "UPDATE users SET disabled = true, epoch = epoch + 1 WHERE id = $1", userID); err != nil {
			return wrap("disable user", err)
		}
		for _, k := range []tokenKind{resetTokens, inviteTokens} {
			if _, err := tx.Exec(ctx, "DELETE FROM "+k.table+" WHERE user_id = $1", userID); err != nil {
				return wrap("disable user: "+k.what+" tokens", err)
			}
		}
		var err error
		n, err = deleteUserSessions(ctx, tx, userID)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// DeleteUser deletes the user with their identities, sessions and API
// tokens (notified), reset and invite tokens and queued mail (jobs for the user and messages to
// their address), in one transaction. Unknown user:
// storage.ErrNotFound.
func (s *Store) DeleteUser(ctx context.Context, userID string) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := lockUser(ctx, tx, userID); err != nil {
			return err
		}
		for _, sql := range []string{
			"DELETE FROM identities WHERE user_id = $1",
			"DELETE FROM reset_tokens WHERE user_id = $1",
			"DELETE FROM invite_tokens WHERE user_id = $1",
			"DELETE FROM api_tokens WHERE user_id = $1",
			"DELETE FROM mail WHERE user_id = $1 OR lower(btrim(to_addr)) = (SELECT email FROM users WHERE id = $1)",
			"DELETE FROM users WHERE id = $1",
		} {
			if _, err := tx.Exec(ctx, sql, userID); err != nil {
				return wrap("delete user", err)
			}
		}
		_, err := deleteUserSessions(ctx, tx, userID)
		return err
	})
}

// UpgradePasswordHash replaces the user's password hash with newHash only
// if it is still oldHash (a compare-and-swap, for rehashing a verified
// password with current parameters at sign-in), so it never overwrites a
// newer hash; it does not change the Epoch. Another hash in place:
// storage.ErrCredentialsChanged; unknown user: storage.ErrNotFound.
func (s *Store) UpgradePasswordHash(ctx context.Context, userID, oldHash, newHash string) error {
	var swapped bool
	err := s.pool.QueryRow(ctx, `WITH up AS (
			UPDATE users SET password_hash = $3 WHERE id = $1 AND password_hash = $2 RETURNING 1
		) SELECT EXISTS (SELECT 1 FROM up)`, userID, oldHash, newHash).Scan(&swapped)
	if err != nil {
		return wrap("upgrade password hash", err)
	}
	if swapped {
		return nil
	}
	if _, err := s.UserByID(ctx, userID); err != nil {
		return err
	}
	return fmt.Errorf("storage/postgres: upgrade password hash: %w", storage.ErrCredentialsChanged)
}
