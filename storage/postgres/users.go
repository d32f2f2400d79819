package postgres

import (
	"context"
	"fmt"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/jackc/pgx/v5"
)

const userColumns = "id, email, password_hash, created_at, disabled, epoch"

// scanUser reads one row of userColumns.
func scanUser(row pgx.Row) (storage.User, error) {
	var (
		u     storage.User
		epoch int64
	)
	err := row.Scan(&u.ID, &u.Email, &u.PasswordHash, &u.CreatedAt, &u.Disabled, &epoch)
	u.Epoch = uint64(epoch)
	return u, err
}

// CreateUser stores u with its email normalized: storage.ErrEmailTaken when
// another user has the email; an empty or used ID is refused.
func (s *Store) CreateUser(ctx context.Context, u storage.User) error {
	return s.tx(ctx, func(tx pgx.Tx) error { return insertUser(ctx, tx, u) })
}

func insertUser(ctx context.Context, tx pgx.Tx, u storage.User) error {
	if u.ID == "" {
		return fmt.Errorf("storage/postgres: create user: empty id")
	}
	_, err := tx.Exec(ctx, "INSERT INTO users ("+userColumns+") VALUES ($1, $2, $3, $4, $5, $6)",
		u.ID, storage.NormalizeEmail(u.Email), u.PasswordHash, u.CreatedAt, u.Disabled, int64(u.Epoch))
	if isUnique(err, "users_email_key") {
		return fmt.Errorf("storage/postgres: create user: %w", storage.ErrEmailTaken)
	}
	if err != nil {
		return wrap("create user", err)
	}
	return nil
}

// UserByID returns the user, storage.ErrNotFound if there is none.
func (s *Store) UserByID(ctx context.Context, id string) (storage.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, "SELECT "+userColumns+" FROM users WHERE id = $1", id))
	if err != nil {
		return storage.User{}, wrap("user", err)
	}
	return u, nil
}

// UserByEmail normalizes email and returns its user, storage.ErrNotFound if there is none.
func (s *Store) UserByEmail(ctx context.Context, email string) (storage.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, "SELECT "+userColumns+" FROM users WHERE email = $1",
		storage.NormalizeEmail(email)))
	if err != nil {
		return storage.User{}, wrap("user by email", err)
	}
	return u, nil
}

// ListUsers returns every user, sorted by email.
func (s *Store) ListUsers(ctx context.Context) ([]storage.User, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+userColumns+" FROM users ORDER BY email")
	if err != nil {
		return nil, wrap("list users", err)
	}
	users, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (storage.User, error) { return scanUser(r) })
	if err != nil {
		return nil, wrap("list users", err)
	}
	return users, nil
}

// SetPasswordHash, in one transaction, replaces the user's password hash
// (empty removes the password), bumps the user's credential Epoch (so that
// no session checked against the old password is created after it, see
// CreateSession), voids the user's reset tokens and deletes (and notifies)
// the user's sessions; it reports how many went. storage.ErrNotFound for an
// unknown user.
func (s *Store) SetPasswordHash(ctx context.Context, userID, hash string) (int, error) {
	var n int
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := lockUser(ctx, tx, userID); err != nil {
			return err
		}
		var err error
		_, n, err = replacePassword(ctx, tx, userID, hash)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// ChangePassword does what SetPasswordHash does if the user is enabled and
// still at epoch; storage.ErrCredentialsChanged and nothing written
// otherwise. It returns the updated user and the sessions deleted.
func (s *Store) ChangePassword(ctx context.Context, userID string, epoch uint64, hash string) (storage.User, int, error) {
	var (
		u storage.User
		n int
	)
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		if u, err = lockUser(ctx, tx, userID); err != nil {
			return err
		}
		if u.Disabled || u.Epoch != epoch {
			return fmt.Errorf("storage/postgres: change password: %w", storage.ErrCredentialsChanged)
		}
		u, n, err = replacePassword(ctx, tx, userID, hash)
		return err
	})
	if err != nil {
		return storage.User{}, 0, err
	}
	return u, n, nil
}

// replacePassword, inside tx, gives the user (locked by the caller) the
// password hash, bumps the Epoch, voids the reset tokens and deletes (and
// notifies) the sessions: every way a password is replaced (a reset, a
// change, an administrator's) does all four. The update comes before the
// delete, as in revokeUser.
func replacePassword(ctx context.Context, tx pgx.Tx, userID, hash string) (storage.User, int, error) {
	u, err := scanUser(tx.QueryRow(ctx, "UPDATE users SET password_hash = $2, epoch = epoch + 1 WHERE id = $1 RETURNING "+userColumns,
		userID, hash))
	if err != nil {
		return storage.User{}, 0, wrap("replace password: user", err)
	}
	if _, err := tx.Exec(ctx, "DELETE FROM reset_tokens WHERE user_id = $1", userID); err != nil {
		return storage.User{}, 0, wrap("replace password: reset tokens", err)
	}
	n, err := deleteUserSessions(ctx, tx, userID)
	if err != nil {
		return storage.User{}, 0, err
	}
	return u, n, nil
}
