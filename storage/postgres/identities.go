package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/jackc/pgx/v5"
)

// validText reports whether s can be stored as PostgreSQL text (no NUL byte).
func validText(s string) bool { return !strings.ContainsRune(s, 0) }

// CreateUserWithIdentity creates u and links id to it (id.UserID is set to
// u.ID) in one transaction: storage.ErrEmailTaken or storage.ErrIdentityInUse
// and nothing is written.
func (s *Store) CreateUserWithIdentity(ctx context.Context, u storage.User, id storage.Identity) error {
	id.UserID = u.ID
	return s.tx(ctx, func(tx pgx.Tx) error {
		if err := checkIdentity(id); err != nil {
			return err
		}
		var taken bool
		err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM identities WHERE provider = $1 AND subject = $2)",
			id.Provider, id.Subject).Scan(&taken)
		if err != nil {
			return wrap("create user", err)
		}
		if taken {
			return fmt.Errorf("storage/postgres: create user: %w", storage.ErrIdentityInUse)
		}
		if err := insertUser(ctx, tx, u); err != nil {
			return err
		}
		return insertIdentity(ctx, tx, id)
	})
}

func checkIdentity(id storage.Identity) error {
	if id.Provider == "" || id.Subject == "" || id.UserID == "" ||
		!validText(id.Provider) || !validText(id.Subject) || !validText(id.Email) {
		return fmt.Errorf("storage/postgres: identity: invalid provider, subject or user")
	}
	return nil
}

func insertIdentity(ctx context.Context, tx pgx.Tx, id storage.Identity) error {
	_, err := tx.Exec(ctx, "INSERT INTO identities (provider, subject, email, user_id, created_at) VALUES ($1, $2, $3, $4, $5)",
		id.Provider, id.Subject, id.Email, id.UserID, id.CreatedAt)
	if isUnique(err, "identities_pkey") || isUnique(err, "identities_user_id_provider_key") {
		return fmt.Errorf("storage/postgres: link identity: %w", storage.ErrIdentityInUse)
	}
	if err != nil {
		return wrap("link identity", err)
	}
	return nil
}

// UserByIdentity returns the user linked to the provider account,
// storage.ErrNotFound if there is none.
func (s *Store) UserByIdentity(ctx context.Context, provider, subject string) (storage.User, error) {
	if !validText(provider) || !validText(subject) {
		return storage.User{}, notFound("identity")
	}
	u, err := scanUser(s.pool.QueryRow(ctx, "SELECT "+prefixed("u.", userColumns)+
		" FROM identities i JOIN users u ON u.id = i.user_id WHERE i.provider = $1 AND i.subject = $2",
		provider, subject))
	if err != nil {
		return storage.User{}, wrap("user by identity", err)
	}
	return u, nil
}

// prefixed qualifies each column of a comma-separated list.
func prefixed(p, columns string) string {
	cols := strings.Split(columns, ", ")
	for i := range cols {
		cols[i] = p + cols[i]
	}
	return strings.Join(cols, ", ")
}

// IdentitiesOfUser returns the user's identities sorted by provider; none
// (and no error) for a user without identities or an unknown user.
func (s *Store) IdentitiesOfUser(ctx context.Context, userID string) ([]storage.Identity, error) {
	rows, err := s.pool.Query(ctx, "SELECT provider, subject, email, user_id, created_at FROM identities WHERE user_id = $1 ORDER BY provider", userID)
	if err != nil {
		return nil, wrap("identities of user", err)
	}
	ids, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (storage.Identity, error) {
		var id storage.Identity
		err := r.Scan(&id.Provider, &id.Subject, &id.Email, &id.UserID, &id.CreatedAt)
		return id, err
	})
	if err != nil {
		return nil, wrap("identities of user", err)
	}
	return ids, nil
}

// LinkIdentity attaches id to the user id.UserID for the session whose hash
// is session: only while that session exists, is the user's, and the user
// is enabled and at the session's Epoch (storage.ErrCredentialsChanged
// otherwise). Already linked to that user: nil and nothing changes. Linked
// to another user, or the user has another account of the provider:
// storage.ErrIdentityInUse.
func (s *Store) LinkIdentity(ctx context.Context, id storage.Identity, session storage.Hash) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		if err := checkIdentity(id); err != nil {
			return err
		}
		// Lock the user row: a concurrent unlink, delete or credential
		// change waits for us, or has ended the session before we look.
		u, err := lockUser(ctx, tx, id.UserID)
		if err != nil {
			return wrap2("link identity", err)
		}
		var epoch int64
		err = tx.QueryRow(ctx, "SELECT epoch FROM sessions WHERE id_hash = $1 AND user_id = $2", session[:], id.UserID).Scan(&epoch)
		switch {
		case err == pgx.ErrNoRows:
			return fmt.Errorf("storage/postgres: link identity: the session has ended: %w", storage.ErrCredentialsChanged)
		case err != nil:
			return wrap("link identity: session", err)
		case u.Disabled || u.Epoch != uint64(epoch):
			return fmt.Errorf("storage/postgres: link identity: %w", storage.ErrCredentialsChanged)
		}
		var owner string
		err = tx.QueryRow(ctx, "SELECT user_id FROM identities WHERE provider = $1 AND subject = $2",
			id.Provider, id.Subject).Scan(&owner)
		switch {
		case err == nil && owner == id.UserID:
			return nil
		case err == nil:
			return fmt.Errorf("storage/postgres: link identity: %w", storage.ErrIdentityInUse)
		case err != pgx.ErrNoRows:
			return wrap("link identity", err)
		}
		return insertIdentity(ctx, tx, id)
	})
}

// UnlinkIdentity detaches the user's identity of provider:
// storage.ErrNotLinked if there is none, storage.ErrLastLoginMethod when the
// user has no password and no other identity.
func (s *Store) UnlinkIdentity(ctx context.Context, userID, provider string) error {
	if !validText(provider) {
		return fmt.Errorf("storage/postgres: unlink identity: %w", storage.ErrNotLinked)
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		var password string
		err := tx.QueryRow(ctx, "SELECT password_hash FROM users WHERE id = $1 FOR UPDATE", userID).Scan(&password)
		if err == pgx.ErrNoRows {
			return fmt.Errorf("storage/postgres: unlink identity: %w", storage.ErrNotLinked)
		}
		if err != nil {
			return wrap("unlink identity", err)
		}
		var linked, others int
		err = tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE provider = $2), count(*) FILTER (WHERE provider <> $2)
			FROM identities WHERE user_id = $1`, userID, provider).Scan(&linked, &others)
		if err != nil {
			return wrap("unlink identity", err)
		}
		switch {
		case linked == 0:
			return fmt.Errorf("storage/postgres: unlink identity: %w", storage.ErrNotLinked)
		case password == "" && others == 0:
			return fmt.Errorf("storage/postgres: unlink identity: %w", storage.ErrLastLoginMethod)
		}
		_, err = tx.Exec(ctx, "DELETE FROM identities WHERE user_id = $1 AND provider = $2", userID, provider)
		return wrap2("unlink identity", err)
	})
}

// wrap2 is wrap for an error that may be nil.
func wrap2(op string, err error) error {
	if err == nil {
		return nil
	}
	return wrap(op, err)
}
