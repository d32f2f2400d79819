package postgres

import (
	"context"
	"encoding/hex"
	"errors"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/jackc/pgx/v5"
)

const apiTokenColumns = "id, hash, name, user_id, service, groups, created_at, expires_at, last_used"

// scanAPIToken reads apiTokenColumns, then into extra.
func scanAPIToken(row pgx.Row, extra ...any) (storage.APIToken, error) {
	var (
		t                   storage.APIToken
		hash                []byte
		expiresAt, lastUsed *time.Time
	)
	dest := append([]any{&t.ID, &hash, &t.Name, &t.UserID, &t.Service, &t.Groups, &t.CreatedAt, &expiresAt, &lastUsed}, extra...)
	if err := row.Scan(dest...); err != nil {
		return storage.APIToken{}, err
	}
	t.Hash = hashFrom(hash)
	if expiresAt != nil {
		t.ExpiresAt = *expiresAt
	}
	if lastUsed != nil {
		t.LastUsed = *lastUsed
	}
	return t, nil
}

// notifyAPIToken sends, inside tx, the revocation of one API token.
func notifyAPIToken(ctx context.Context, tx pgx.Tx, h storage.Hash) error {
	_, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", RevokeChannel, "t:"+hex.EncodeToString(h[:]))
	return err
}

// CreateAPIToken stores t. A user's token is inserted in the statement that
// reads its user FOR SHARE, so a DeleteUser (which locks the user's row
// before it deletes the user's tokens) either waits and then deletes the
// new token too, or commits first and nothing is inserted
// (storage.ErrNotFound). An id or hash already stored is refused.
func (s *Store) CreateAPIToken(ctx context.Context, t storage.APIToken) error {
	if (t.UserID == "") == (t.Service == "") {
		return errors.New("storage/postgres: create API token: it belongs to a user or to a service")
	}
	for _, str := range append([]string{t.ID, t.Name, t.UserID, t.Service}, t.Groups...) {
		if !validText(str) {
			return errors.New("storage/postgres: create API token: a NUL byte in a field")
		}
	}
	groups := t.Groups
	if groups == nil {
		groups = []string{}
	}
	var users, inserted int
	err := s.pool.QueryRow(ctx, `WITH u AS (
			SELECT id FROM users WHERE id = $4 FOR SHARE
		), ins AS (
			INSERT INTO api_tokens (`+apiTokenColumns+`)
			SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9
			WHERE $4 = '' OR EXISTS (SELECT 1 FROM u)
			ON CONFLICT DO NOTHING RETURNING 1
		)
		SELECT (SELECT count(*) FROM u), (SELECT count(*) FROM ins)`,
		t.ID, t.Hash[:], t.Name, t.UserID, t.Service, groups, t.CreatedAt, nullTime(t.ExpiresAt), nullTime(t.LastUsed),
	).Scan(&users, &inserted)
	switch {
	case err != nil:
		return wrap("create API token", err)
	case t.UserID != "" && users == 0:
		return notFound("create API token: user")
	case inserted == 0:
		return errors.New("storage/postgres: create API token: an API token with this id or hash exists")
	}
	return nil
}

// APITokens returns every token, oldest first (ties by id).
func (s *Store) APITokens(ctx context.Context) ([]storage.APIToken, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+apiTokenColumns+" FROM api_tokens ORDER BY created_at, id")
	if err != nil {
		return nil, wrap("API tokens", err)
	}
	tokens, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (storage.APIToken, error) { return scanAPIToken(r) })
	if err != nil {
		return nil, wrap("API tokens", err)
	}
	return tokens, nil
}

// RevokeAPIToken deletes the token with that id, notifies its revocation
// (every replica's cache drops it) and returns it; an unknown id is
// storage.ErrNotFound.
func (s *Store) RevokeAPIToken(ctx context.Context, id string) (storage.APIToken, error) {
	var t storage.APIToken
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		t, err = scanAPIToken(tx.QueryRow(ctx, "DELETE FROM api_tokens WHERE id = $1 RETURNING "+apiTokenColumns, id))
		if err != nil {
			return wrap("revoke API token", err)
		}
		return wrap2("revoke API token", notifyAPIToken(ctx, tx, t.Hash))
	})
	if err != nil {
		return storage.APIToken{}, err
	}
	return t, nil
}

// APITokenByHash returns the token under h with its owner's state, in one
// statement; a user's token whose user is gone is storage.ErrNotFound.
func (s *Store) APITokenByHash(ctx context.Context, h storage.Hash) (storage.APIToken, storage.APITokenOwner, error) {
	var (
		email    *string
		disabled *bool
	)
	t, err := scanAPIToken(s.pool.QueryRow(ctx, `SELECT `+prefixed("t.", apiTokenColumns)+`, u.email, u.disabled
		FROM api_tokens t LEFT JOIN users u ON t.user_id <> '' AND u.id = t.user_id
		WHERE t.hash = $1`, h[:]), &email, &disabled)
	if err != nil {
		return storage.APIToken{}, storage.APITokenOwner{}, wrap("API token", err)
	}
	if t.UserID == "" {
		return t, storage.APITokenOwner{}, nil
	}
	if email == nil || disabled == nil {
		return storage.APIToken{}, storage.APITokenOwner{}, notFound("API token: user")
	}
	return t, storage.APITokenOwner{Email: *email, Disabled: *disabled}, nil
}

// TouchAPITokens moves LastUsed of the given tokens forward in one
// statement; unknown ones, times not after the stored one and rows another
// transaction holds (SKIP LOCKED: a revocation deleting them, another
// replica's touch) are skipped, as for sessions' TouchSessions: a touch is
// best effort and never waits in a lock cycle. It notifies nothing.
func (s *Store) TouchAPITokens(ctx context.Context, lastUsed map[storage.Hash]time.Time) error {
	if len(lastUsed) == 0 {
		return nil
	}
	hashes := make([][]byte, 0, len(lastUsed))
	times := make([]time.Time, 0, len(lastUsed))
	for h, t := range lastUsed {
		hashes = append(hashes, h[:])
		times = append(times, t)
	}
	_, err := s.pool.Exec(ctx, `WITH locked AS (
			SELECT a.hash, v.t FROM api_tokens a
			JOIN unnest($1::bytea[], $2::timestamptz[]) AS v(h, t) ON a.hash = v.h
			WHERE a.last_used IS NULL OR a.last_used < v.t
			FOR NO KEY UPDATE OF a SKIP LOCKED
		) UPDATE api_tokens SET last_used = locked.t FROM locked WHERE api_tokens.hash = locked.hash`, hashes, times)
	return wrap2("touch API tokens", err)
}
