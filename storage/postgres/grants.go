package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Provider sessions' grants (migration 0007): a grant row goes with its
// session row (ON DELETE CASCADE), so every deletion of a session,
// notified to the replicas as before, takes the grant with it.

const grantColumns = "session_hash, user_id, provider, subject, sid, tokens, next_refresh"

// isForeignKey reports whether err is a foreign key violation: the
// session went between the check and the insert.
func isForeignKey(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23503"
}

func scanGrant(row pgx.Row) (storage.Grant, error) {
	var (
		g    storage.Grant
		hash []byte
	)
	err := row.Scan(&hash, &g.UserID, &g.Provider, &g.Subject, &g.SID, &g.Tokens, &g.NextRefresh)
	g.Session = hashFrom(hash)
	return g, err
}

// PutGrant stores g while its session exists (the foreign key refuses one
// that does not).
func (s *Store) PutGrant(ctx context.Context, g storage.Grant) error {
	tag, err := s.pool.Exec(ctx, `INSERT INTO session_grants (`+grantColumns+`)
		SELECT $1, $2, $3, $4, $5, $6, $7 WHERE EXISTS (SELECT 1 FROM sessions WHERE id_hash = $1)
		ON CONFLICT (session_hash) DO UPDATE SET user_id = $2, provider = $3, subject = $4,
			sid = $5, tokens = $6, next_refresh = $7`,
		g.Session[:], g.UserID, g.Provider, g.Subject, g.SID, g.Tokens, g.NextRefresh)
	switch {
	case isForeignKey(err):
		return notFound("session of the grant")
	case err != nil:
		return wrap("put grant", err)
	case tag.RowsAffected() == 0:
		return notFound("session of the grant")
	}
	return nil
}

// GrantOf returns the session's grant.
func (s *Store) GrantOf(ctx context.Context, session storage.Hash) (storage.Grant, error) {
	g, err := scanGrant(s.pool.QueryRow(ctx, "SELECT "+grantColumns+" FROM session_grants WHERE session_hash = $1", session[:]))
	if err != nil {
		return storage.Grant{}, wrap("grant", err)
	}
	return g, nil
}

// ClaimDueGrants takes due rows no other transaction holds (SKIP LOCKED):
// replicas claiming at once take different grants.
func (s *Store) ClaimDueGrants(ctx context.Context, now, until time.Time, limit int) ([]storage.Grant, error) {
	rows, err := s.pool.Query(ctx, `UPDATE session_grants SET next_refresh = $2
		WHERE session_hash IN (SELECT session_hash FROM session_grants WHERE next_refresh <= $1
			ORDER BY next_refresh LIMIT $3 FOR UPDATE SKIP LOCKED)
		RETURNING `+grantColumns, now, until, limit)
	if err != nil {
		return nil, wrap("claim due grants", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (storage.Grant, error) { return scanGrant(row) })
	if err != nil {
		return nil, wrap("claim due grants", err)
	}
	return out, nil
}

// RefreshSession updates the session's groups and its grant, and notifies
// the session's change as a revocation: every replica's cache drops it and
// reads the new groups.
func (s *Store) RefreshSession(ctx context.Context, session storage.Hash, groups string, tokens []byte, next time.Time) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE session_grants SET tokens = COALESCE($2, tokens), next_refresh = $3
			WHERE session_hash = $1`, session[:], tokens, next)
		if err != nil {
			return wrap("refresh session: grant", err)
		}
		if tag.RowsAffected() == 0 {
			return notFound("grant")
		}
		if _, err := tx.Exec(ctx, "UPDATE sessions SET groups = $2 WHERE id_hash = $1", session[:], groups); err != nil {
			return wrap("refresh session", err)
		}
		return wrap2("refresh session", notifySession(ctx, tx, session))
	})
}

// EndGrantSessions deletes the matching sessions (their grants cascade)
// and notifies each.
func (s *Store) EndGrantSessions(ctx context.Context, provider, subject, sid string) ([]storage.Grant, error) {
	if subject == "" && sid == "" {
		return nil, errors.New("storage/postgres: ending grant sessions needs a subject or a sid")
	}
	var out []storage.Grant
	err := s.tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+grantColumns+` FROM session_grants
			WHERE provider = $1 AND ($2 = '' OR subject = $2) AND ($3 = '' OR sid = $3) FOR UPDATE`, provider, subject, sid)
		if err != nil {
			return wrap("end grant sessions", err)
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (storage.Grant, error) { return scanGrant(row) })
		if err != nil {
			return wrap("end grant sessions", err)
		}
		for _, g := range out {
			if _, err := tx.Exec(ctx, "DELETE FROM sessions WHERE id_hash = $1", g.Session[:]); err != nil {
				return wrap("end grant sessions", err)
			}
			if err := notifySession(ctx, tx, g.Session); err != nil {
				return wrap("end grant sessions", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UseOnce inserts the mark, or takes over one past its until.
func (s *Store) UseOnce(ctx context.Context, key storage.Hash, now, until time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO used_marks (key, until) VALUES ($1, $3)
		ON CONFLICT (key) DO UPDATE SET until = $3 WHERE used_marks.until <= $2`, key[:], now, until)
	if err != nil {
		return false, wrap("use once", err)
	}
	return tag.RowsAffected() == 1, nil
}
