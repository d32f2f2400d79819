package storage

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"
)

// APITokenPrefix starts every API token, so that a token is recognised by
// its shape (and by secret scanners) before anything is looked up.
const APITokenPrefix = "ghp_"

// apiTokenBytes is the randomness of an API token: 256 bits, written as
// apiTokenChars base64url characters after the prefix.
const (
	apiTokenBytes = 32
	apiTokenChars = 43
)

// APITokenLen is the length of an API token: the prefix and 43 characters.
const APITokenLen = len(APITokenPrefix) + apiTokenChars

// NewAPIToken returns a new API token ("ghp_" and 256 bits from
// crypto/rand in base64url) and its hash, the only form that is stored.
func NewAPIToken() (token string, hash Hash) {
	var b [apiTokenBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	token = APITokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return token, HashSecret(token)
}

// IsAPITokenShape reports whether s has the shape of an API token: the
// prefix and exactly 43 base64url characters that decode, strictly, to
// 256 bits. It reads nothing but s, so a caller can refuse a value of the
// wrong shape before any lookup.
func IsAPITokenShape(s string) bool {
	rest, ok := strings.CutPrefix(s, APITokenPrefix)
	if !ok || len(rest) != apiTokenChars {
		return false
	}
	var b [apiTokenBytes + 1]byte
	n, err := base64.RawURLEncoding.Strict().Decode(b[:], []byte(rest))
	return err == nil && n == apiTokenBytes
}

// NewAPITokenID returns the public handle of a new API token: 64 random
// bits in lowercase hex. It names the token in lists, audit events and
// `tokens revoke`; it is not a secret and grants nothing.
func NewAPITokenID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// APIToken is a credential for a script or a service, sent as
// "Authorization: Bearer ghp_…". It belongs either to a user (UserID: it
// acts as that user) or to a service (Service: it acts as "service:NAME"
// with Groups). Only the token's hash is stored.
type APIToken struct {
	ID        string // NewAPITokenID: the public handle
	Hash      Hash   // SHA-256 of the token (HashSecret)
	Name      string // what the token is for, as the operator wrote it
	UserID    string // owner, for a user's token; empty for a service token
	Service   string // service name, for a service token; empty for a user's token
	Groups    []string
	CreatedAt time.Time
	ExpiresAt time.Time // zero: the token does not expire
	LastUsed  time.Time // zero: never used; written in batches (TouchAPITokens)
}

// Expired reports whether the token no longer authenticates at now.
func (t APIToken) Expired(now time.Time) bool {
	return !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt)
}

// APITokenOwner is the state of a user's token's owner as the lookup found
// it, so that the caller refuses a disabled user's token without a second
// read. For a service token it is the zero value.
type APITokenOwner struct {
	Email    string
	Disabled bool
}

// APITokenStore is the API tokens part of Store. Every method is atomic on
// its own. A user's tokens go with the user (DeleteUser); disabling a user
// keeps them but APITokenByHash reports the user disabled.
type APITokenStore interface {
	// CreateAPIToken stores t. A user's token is stored only if, in the
	// same transaction, its user exists (ErrNotFound otherwise, and nothing
	// is written), so a token never outlives a user deleted meanwhile. A
	// token with the ID or Hash of a stored one is refused.
	CreateAPIToken(ctx context.Context, t APIToken) error
	// APITokens returns every token, oldest first (ties by ID).
	APITokens(ctx context.Context) ([]APIToken, error)
	// RevokeAPIToken deletes the token with that ID and returns it; an
	// unknown ID is ErrNotFound. A shared backend tells every replica
	// (see storage/cache), as it does for a revoked session.
	RevokeAPIToken(ctx context.Context, id string) (APIToken, error)
	// APITokenByHash returns the token stored under h with its owner's
	// state; ErrNotFound when there is none (or its user is gone). Expiry
	// is the caller's decision; the lookup writes nothing.
	APITokenByHash(ctx context.Context, h Hash) (APIToken, APITokenOwner, error)
	// TouchAPITokens moves LastUsed of the given tokens forward to the
	// given times (a time not after the stored one changes nothing);
	// unknown tokens are skipped. It revokes nothing.
	TouchAPITokens(ctx context.Context, lastUsed map[Hash]time.Time) error
}
