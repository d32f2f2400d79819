package postgres

import (
	"context"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/jackc/pgx/v5"
)

// Second-factor steps and WebAuthn ceremonies: short-lived records keyed by
// the hash of a browser's cookie, taken once, like the OAuth flows.

const stepColumns = "browser_hash, user_id, epoch, method, groups, redirect, created_at, expires_at, session_created_at, session_expires_at, " +
	"grant_provider, grant_subject, grant_sid, grant_tokens, grant_next_refresh"

func scanStep(row pgx.Row) (storage.SecondFactorStep, error) {
	var (
		st                             storage.SecondFactorStep
		hash                           []byte
		epoch                          int64
		sessionCreated, sessionExpires *time.Time
		grantProvider                  *string
		grantNextRefresh               *time.Time
		g                              storage.Grant
	)
	err := row.Scan(&hash, &st.UserID, &epoch, &st.Method, &st.Groups, &st.Redirect, &st.CreatedAt, &st.ExpiresAt, &sessionCreated, &sessionExpires,
		&grantProvider, &g.Subject, &g.SID, &g.Tokens, &grantNextRefresh)
	st.BrowserHash, st.Epoch = hashFrom(hash), uint64(epoch)
	if sessionCreated != nil && sessionExpires != nil {
		st.SessionCreatedAt, st.SessionExpiresAt = *sessionCreated, *sessionExpires
	}
	if grantProvider != nil {
		g.UserID, g.Provider = st.UserID, *grantProvider
		if grantNextRefresh != nil {
			g.NextRefresh = *grantNextRefresh
		}
		st.Grant = &g
	}
	return st, err
}

// stepGrantArgs are the grant_ columns of a step's grant: NULL provider
// for none. The grant's user is the step's.
func stepGrantArgs(g *storage.Grant) []any {
	if g == nil {
		return []any{nil, "", "", nil, nil}
	}
	return []any{g.Provider, g.Subject, g.SID, g.Tokens, nullTime(g.NextRefresh)}
}

// CreateSecondFactorStep stores st, replacing any step under the same
// hash, only if its user exists.
func (s *Store) CreateSecondFactorStep(ctx context.Context, st storage.SecondFactorStep) error {
	tag, err := s.pool.Exec(ctx, `INSERT INTO second_factor_steps (`+stepColumns+`)
		SELECT $1, id, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15 FROM users WHERE id = $2
		ON CONFLICT (browser_hash) DO UPDATE SET user_id = EXCLUDED.user_id, epoch = EXCLUDED.epoch,
			method = EXCLUDED.method, groups = EXCLUDED.groups, redirect = EXCLUDED.redirect,
			created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at,
			session_created_at = EXCLUDED.session_created_at, session_expires_at = EXCLUDED.session_expires_at,
			grant_provider = EXCLUDED.grant_provider, grant_subject = EXCLUDED.grant_subject, grant_sid = EXCLUDED.grant_sid,
			grant_tokens = EXCLUDED.grant_tokens, grant_next_refresh = EXCLUDED.grant_next_refresh`,
		append([]any{st.BrowserHash[:], st.UserID, int64(st.Epoch), st.Method, st.Groups, st.Redirect, st.CreatedAt, st.ExpiresAt,
			nullTime(st.SessionCreatedAt), nullTime(st.SessionExpiresAt)}, stepGrantArgs(st.Grant)...)...)
	if err != nil {
		return wrap("create second-factor step", err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("user")
	}
	return nil
}

// SecondFactorStep returns the step without taking it.
func (s *Store) SecondFactorStep(ctx context.Context, browserHash storage.Hash, now time.Time) (storage.SecondFactorStep, error) {
	st, err := scanStep(s.pool.QueryRow(ctx, "SELECT "+stepColumns+" FROM second_factor_steps WHERE browser_hash = $1", browserHash[:]))
	switch {
	case err != nil:
		return storage.SecondFactorStep{}, wrap("second-factor step", err)
	case !now.Before(st.ExpiresAt):
		return storage.SecondFactorStep{}, notFound("second-factor step")
	}
	return st, nil
}

// TakeSecondFactorStep deletes and returns the step: single use.
func (s *Store) TakeSecondFactorStep(ctx context.Context, browserHash storage.Hash, now time.Time) (storage.SecondFactorStep, error) {
	st, err := scanStep(s.pool.QueryRow(ctx, "DELETE FROM second_factor_steps WHERE browser_hash = $1 RETURNING "+stepColumns, browserHash[:]))
	switch {
	case err != nil:
		return storage.SecondFactorStep{}, wrap("take second-factor step", err)
	case !now.Before(st.ExpiresAt):
		return storage.SecondFactorStep{}, notFound("second-factor step")
	}
	return st, nil
}

const ceremonyColumns = "browser_hash, purpose, user_id, session_hash, data, created_at, expires_at"

// CreateWebAuthnCeremony stores c, replacing any ceremony under the same hash.
func (s *Store) CreateWebAuthnCeremony(ctx context.Context, c storage.WebAuthnCeremony) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO webauthn_ceremonies (`+ceremonyColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (browser_hash) DO UPDATE SET purpose = EXCLUDED.purpose, user_id = EXCLUDED.user_id,
			session_hash = EXCLUDED.session_hash, data = EXCLUDED.data,
			created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at`,
		c.BrowserHash[:], c.Purpose, c.UserID, c.SessionHash[:], nonNil(c.Data), c.CreatedAt, c.ExpiresAt)
	return wrap2("create webauthn ceremony", err)
}

// TakeWebAuthnCeremony deletes and returns the ceremony: single use.
func (s *Store) TakeWebAuthnCeremony(ctx context.Context, browserHash storage.Hash, now time.Time) (storage.WebAuthnCeremony, error) {
	var (
		c                   storage.WebAuthnCeremony
		browser, sessionKey []byte
	)
	err := s.pool.QueryRow(ctx, "DELETE FROM webauthn_ceremonies WHERE browser_hash = $1 RETURNING "+ceremonyColumns,
		browserHash[:]).Scan(&browser, &c.Purpose, &c.UserID, &sessionKey, &c.Data, &c.CreatedAt, &c.ExpiresAt)
	switch {
	case err != nil:
		return storage.WebAuthnCeremony{}, wrap("take webauthn ceremony", err)
	case !now.Before(c.ExpiresAt):
		return storage.WebAuthnCeremony{}, notFound("webauthn ceremony")
	}
	c.BrowserHash, c.SessionHash = hashFrom(browser), hashFrom(sessionKey)
	return c, nil
}

// DeleteExpiredFactorRecords sweeps expired steps, ceremonies and pending
// TOTP factors, in chunks.
func (s *Store) DeleteExpiredFactorRecords(ctx context.Context, now time.Time) (int, error) {
	total := 0
	for _, sql := range []string{
		`DELETE FROM second_factor_steps WHERE browser_hash IN
			(SELECT browser_hash FROM second_factor_steps WHERE expires_at <= $1 LIMIT $2)`,
		`DELETE FROM webauthn_ceremonies WHERE browser_hash IN
			(SELECT browser_hash FROM webauthn_ceremonies WHERE expires_at <= $1 LIMIT $2)`,
		`DELETE FROM totp_factors WHERE id IN
			(SELECT id FROM totp_factors WHERE NOT confirmed AND expires_at <= $1 LIMIT $2)`,
	} {
		n, err := sweep(ctx, s, sql, now, sweepChunk)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
