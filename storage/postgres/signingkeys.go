package postgres

import (
	"context"
	"fmt"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/jackc/pgx/v5"
)

// The signing_keys table holds a handful of keys (current, next, retired
// ones). Key ids compare byte-wise (COLLATE "C"), as in every backend.

const signingKeyColumns = "id, private_key, created_at, active_from"

// SigningKeys returns every stored key, ordered by ActiveFrom then ID.
func (s *Store) SigningKeys(ctx context.Context) ([]storage.SigningKey, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+signingKeyColumns+" FROM signing_keys ORDER BY active_from, id")
	if err != nil {
		return nil, wrap("signing keys", err)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (storage.SigningKey, error) {
		var k storage.SigningKey
		err := r.Scan(&k.ID, &k.PrivateKey, &k.CreatedAt, &k.ActiveFrom)
		return k, err
	})
	if err != nil {
		return nil, wrap("signing keys", err)
	}
	return keys, nil
}

// AddSigningKey stores k only if the newest stored key has the ID after (""
// for none); otherwise, or when k.ID exists, storage.ErrConflict and nothing
// is written. Replicas rotating at once take turns on a table lock that
// only writers of signing keys take (readers are not blocked), so exactly
// one of them adds its key.
func (s *Store) AddSigningKey(ctx context.Context, k storage.SigningKey, after string) error {
	if k.ID == "" || len(k.PrivateKey) == 0 {
		return fmt.Errorf("storage/postgres: signing key needs an id and a private key")
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "LOCK TABLE signing_keys IN SHARE ROW EXCLUSIVE MODE"); err != nil {
			return wrap("add signing key", err)
		}
		// Read Committed: this statement's snapshot is taken after the lock,
		// so it sees the key of a rotation that committed while we waited.
		var newest string
		var exists bool
		err := tx.QueryRow(ctx, `SELECT
			coalesce((SELECT id FROM signing_keys ORDER BY active_from DESC, id DESC LIMIT 1), ''),
			EXISTS (SELECT 1 FROM signing_keys WHERE id = $1)`, k.ID).Scan(&newest, &exists)
		if err != nil {
			return wrap("add signing key", err)
		}
		if newest != after || exists {
			return fmt.Errorf("storage/postgres: add signing key %q after %q (newest is %q): %w", k.ID, after, newest, storage.ErrConflict)
		}
		_, err = tx.Exec(ctx, "INSERT INTO signing_keys ("+signingKeyColumns+") VALUES ($1, $2, $3, $4)",
			k.ID, k.PrivateKey, k.CreatedAt, k.ActiveFrom)
		return wrap2("add signing key", err)
	})
}

// DeleteSigningKey removes the key; an unknown id is not an error.
func (s *Store) DeleteSigningKey(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, "DELETE FROM signing_keys WHERE id = $1", id)
	return wrap2("delete signing key", err)
}
