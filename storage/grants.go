package storage

import (
	"context"
	"time"
)

// Grant is what a provider sign-in leaves with its session so that it can
// be checked again with the provider (the refresher) and ended by it
// (back-channel logout). It lives and dies with its session: every
// deletion of the session (sign-out, revocation, expiry, a credential
// change, the user's deletion) deletes the grant with it.
type Grant struct {
	Session  Hash   // the session's IDHash
	UserID   string // the session's user
	Provider string // "google", "github" or "oidc"
	// Subject is the provider's account id, as Identity.Subject spells it
	// (oidc: "ISSUER#SUB").
	Subject string
	// SID is the OpenID Provider's session id (the ID token's sid), empty
	// when it sent none.
	SID string
	// Tokens are the provider's tokens, sealed by the caller (nothing a
	// store can read); nil when none are kept (no --token-key-file).
	Tokens []byte
	// NextRefresh is when the refresher takes the grant next; while a
	// replica holds it (see ClaimDueGrants), when that hold ends.
	NextRefresh time.Time
}

// GrantStore keeps the grants of provider sessions and the single-use
// marks of tokens a provider sends (a logout token's jti).
type GrantStore interface {
	// PutGrant stores g as its session's grant (replacing any), only while
	// that session exists: ErrNotFound otherwise, and nothing is written.
	PutGrant(ctx context.Context, g Grant) error
	// GrantOf returns the session's grant, ErrNotFound when it has none.
	GrantOf(ctx context.Context, session Hash) (Grant, error)
	// ClaimDueGrants, in one transaction, takes up to limit grants whose
	// NextRefresh is not after now, earliest first, and moves their
	// NextRefresh to until (returned so): no other caller, on any replica,
	// takes them before then. The claimer records the outcome with
	// RefreshSession or ends the session; one that dies leaves them to be
	// taken again at until.
	ClaimDueGrants(ctx context.Context, now, until time.Time, limit int) ([]Grant, error)
	// RefreshSession records a check with the provider that kept the
	// session: its Groups become groups, its grant's Tokens become tokens
	// (nil keeps them) and its NextRefresh next. The change reaches the
	// session lookups of every replica as a revocation does (a shared
	// backend notifies them). A session that is gone: ErrNotFound.
	RefreshSession(ctx context.Context, session Hash, groups string, tokens []byte, next time.Time) error
	// EndGrantSessions deletes, in one transaction, every session whose
	// grant is of provider and matches subject and sid (an empty one
	// matches any, not both empty), as DeleteSession does (every replica
	// hears of it), and returns their grants.
	EndGrantSessions(ctx context.Context, provider, subject, sid string) ([]Grant, error)
	// UseOnce marks key used until until: true the first time, false while
	// an earlier mark of the same key has not passed its until at now.
	// Marks past their until are swept by DeleteExpiredSessions.
	UseOnce(ctx context.Context, key Hash, now, until time.Time) (bool, error)
}
