package postgres

import (
	"context"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/jackc/pgx/v5"
)

// CreateOAuthFlow stores f, replacing any flow under the same hash.
func (s *Store) CreateOAuthFlow(ctx context.Context, f storage.OAuthFlow) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO oauth_flows (state_hash, provider, purpose, verifier, nonce, redirect,
		browser_hash, session_hash, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (state_hash) DO UPDATE SET provider = $2, purpose = $3, verifier = $4, nonce = $5,
		redirect = $6, browser_hash = $7, session_hash = $8, created_at = $9, expires_at = $10`,
		f.StateHash[:], f.Provider, f.Purpose, f.Verifier, f.Nonce, f.Redirect,
		f.BrowserHash[:], f.SessionHash[:], f.CreatedAt, f.ExpiresAt)
	return wrap2("create oauth flow", err)
}

// TakeOAuthFlow deletes and returns the flow: single use. Missing, or
// expired at now (deleted all the same): storage.ErrNotFound.
func (s *Store) TakeOAuthFlow(ctx context.Context, stateHash storage.Hash, now time.Time) (storage.OAuthFlow, error) {
	var (
		f                             storage.OAuthFlow
		state, browser, sessionHashes []byte
	)
	err := s.pool.QueryRow(ctx, `DELETE FROM oauth_flows WHERE state_hash = $1 RETURNING state_hash, provider,
		purpose, verifier, nonce, redirect, browser_hash, session_hash, created_at, expires_at`, stateHash[:]).Scan(
		&state, &f.Provider, &f.Purpose, &f.Verifier, &f.Nonce, &f.Redirect, &browser, &sessionHashes, &f.CreatedAt, &f.ExpiresAt)
	if err == pgx.ErrNoRows {
		return storage.OAuthFlow{}, notFound("oauth flow")
	}
	if err != nil {
		return storage.OAuthFlow{}, wrap("take oauth flow", err)
	}
	if !now.Before(f.ExpiresAt) {
		return storage.OAuthFlow{}, notFound("oauth flow")
	}
	f.StateHash, f.BrowserHash, f.SessionHash = hashFrom(state), hashFrom(browser), hashFrom(sessionHashes)
	return f, nil
}

// DeleteExpiredOAuthFlows deletes flows whose ExpiresAt is not after now and reports how many.
func (s *Store) DeleteExpiredOAuthFlows(ctx context.Context, now time.Time) (int, error) {
	return sweep(ctx, s, `DELETE FROM oauth_flows WHERE state_hash IN
		(SELECT state_hash FROM oauth_flows WHERE expires_at <= $1 LIMIT $2)`, now, sweepChunk)
}
