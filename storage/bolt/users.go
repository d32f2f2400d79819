package bolt

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
)

// CreateUser stores u with its email normalized. The email must be free
// (storage.ErrEmailTaken); an ID that is empty, longer than 255 bytes or
// already used is refused too.
func (s *Store) CreateUser(ctx context.Context, u storage.User) error {
	return s.update(ctx, func(tx *bbolt.Tx) error { return insertUser(tx, u) })
}

// insertUser checks u and writes it with its email index entry.
func insertUser(tx *bbolt.Tx, u storage.User) error {
	u.Email = storage.NormalizeEmail(u.Email)
	if !validUserID(u.ID) {
		return errInvalid("user id must be 1 to %d bytes", maxUserIDLen)
	}
	if u.Email == "" {
		return errInvalid("user email is empty")
	}
	byEmail := tx.Bucket(bucketUsersByEmail)
	if byEmail.Get([]byte(u.Email)) != nil {
		return fmt.Errorf("storage/bolt: create user: %w", storage.ErrEmailTaken)
	}
	users := tx.Bucket(bucketUsers)
	if users.Get([]byte(u.ID)) != nil {
		return fmt.Errorf("storage/bolt: create user: id %q already exists", u.ID)
	}
	if err := users.Put([]byte(u.ID), encodeUser(u)); err != nil {
		return err
	}
	return byEmail.Put([]byte(u.Email), []byte(u.ID))
}

// UserByID returns the user, storage.ErrNotFound if there is none.
func (s *Store) UserByID(ctx context.Context, id string) (storage.User, error) {
	var u storage.User
	err := s.view(ctx, func(tx *bbolt.Tx) (err error) {
		u, err = getUser(tx, id)
		return err
	})
	return u, err
}

// UserByEmail normalizes email and returns its user, storage.ErrNotFound if there is none.
func (s *Store) UserByEmail(ctx context.Context, email string) (storage.User, error) {
	var u storage.User
	err := s.view(ctx, func(tx *bbolt.Tx) (err error) {
		id := tx.Bucket(bucketUsersByEmail).Get([]byte(storage.NormalizeEmail(email)))
		if id == nil {
			return notFound("user by email")
		}
		u, err = getUser(tx, string(id))
		return err
	})
	return u, err
}

// ListUsers returns every user, sorted by email.
func (s *Store) ListUsers(ctx context.Context) ([]storage.User, error) {
	var users []storage.User
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketUsers).ForEach(func(_, v []byte) error {
			u, err := decodeUser(v)
			users = append(users, u)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(users, func(a, b storage.User) int { return strings.Compare(a.Email, b.Email) })
	return users, nil
}

// SetPasswordHash, in one transaction, replaces the user's password hash
// (empty removes the password), bumps the user's Epoch, voids the user's
// reset tokens and deletes the user's sessions; it reports how many went.
// storage.ErrNotFound for an unknown user.
func (s *Store) SetPasswordHash(ctx context.Context, userID, hash string) (int, error) {
	var n int
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		u, err := getUser(tx, userID)
		if err != nil {
			return err
		}
		_, n, err = replacePassword(tx, u, hash)
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
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		var err error
		if u, err = getUser(tx, userID); err != nil {
			return err
		}
		if u.Disabled || u.Epoch != epoch {
			return fmt.Errorf("storage/bolt: change password: %w", storage.ErrCredentialsChanged)
		}
		u, n, err = replacePassword(tx, u, hash)
		return err
	})
	if err != nil {
		return storage.User{}, 0, err
	}
	return u, n, nil
}

// replacePassword, inside tx, gives u the password hash, bumps its Epoch,
// voids its reset tokens and deletes its sessions: every way a password
// is replaced (a reset, a change, an administrator's) does all four.
func replacePassword(tx *bbolt.Tx, u storage.User, hash string) (storage.User, int, error) {
	u.PasswordHash = hash
	u, err := putUserBumped(tx, u)
	if err != nil {
		return storage.User{}, 0, err
	}
	if err := voidTokens(tx, resetKind, u.ID); err != nil {
		return storage.User{}, 0, err
	}
	n, err := deleteUserSessions(tx, u.ID)
	if err != nil {
		return storage.User{}, 0, err
	}
	return u, n, nil
}

// getUser reads and decodes one user inside tx.
func getUser(tx *bbolt.Tx, id string) (storage.User, error) {
	if id == "" {
		return storage.User{}, notFound("user")
	}
	v := tx.Bucket(bucketUsers).Get([]byte(id))
	if v == nil {
		return storage.User{}, notFound("user")
	}
	return decodeUser(v)
}

// SetUserDisabled sets the user's Disabled flag; disabling also deletes
// every session of the user, voids the user's reset and invitation tokens
// (enabling revives none) and bumps the credential epoch, all in one
// transaction (AP2, AD2). storage.ErrNotFound for
// an unknown user.
func (s *Store) SetUserDisabled(ctx context.Context, userID string, disabled bool) (int, error) {
	var deleted int
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		u, err := getUser(tx, userID)
		if err != nil {
			return err
		}
		u.Disabled = disabled
		if disabled {
			u.Epoch++
			if deleted, err = deleteUserSessions(tx, u.ID); err != nil {
				return err
			}
			for _, k := range []tokenKind{resetKind, inviteKind} {
				if err := voidTokens(tx, k, u.ID); err != nil {
					return err
				}
			}
		}
		return tx.Bucket(bucketUsers).Put([]byte(u.ID), encodeUser(u))
	})
	if err != nil {
		deleted = 0
	}
	return deleted, err
}
