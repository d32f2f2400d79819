// Package bearer verifies the credentials that scripts and services send
// as "Authorization: Bearer …": Gatehouse's own API tokens ("ghp_" and 43
// base64url characters, looked up by their SHA-256) and JWTs of configured
// identity providers (verified against the issuer's published key set). It
// knows nothing of routes or HTTP answers: the proxy asks Verify only where
// a route accepts tokens, and turns its errors into 401 invalid_token (or
// 503) itself. Throttle counts the bad credentials of a client for the 429.
//
// Dependencies: bearer → storage (the token record, its hash, the email
// syntax), proxy/policy (group names), proxy/idpclient (the bounded HTTP
// client). Only proxy and cmd/gatehouse import
// it. The store interface it needs (TokenStore) is declared here.
//
// Nothing is read from a store or a provider for a credential of the wrong
// shape: the header is bounded before it is parsed (MaxCredential), a value
// that is neither an API token nor a JWT of a configured issuer is refused
// as it is. In steady state the request path reads no store and verifies no
// signature:
//
//   - API tokens are looked up through the store on every request, and the
//     store answers from memory: storage/cache (over PostgreSQL) keeps
//     tokens as it keeps sessions, dropped by the revocation NOTIFY of any
//     replica within a second and bypassed while the cache cannot prove it
//     hears them; storage/bolt keeps them exactly, dropped by every write.
//     One cache, with the sessions' proven invalidation, instead of a second
//     one here whose revocations would need wiring of their own: a revoked
//     token is refused on the next request of the replica that revoked it
//     and within a second on every other.
//   - A verified JWT is kept here, under its SHA-256, until its exp or for
//     MaxJWTCache, whichever is sooner: its signature is checked once.
//
// Last use of an API token is recorded in memory and written in batches by
// Run (at most once a TouchInterval per token), off the request path.
package bearer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// AMR values of an Identity, as the identity assertion's amr carries them.
const (
	AMRToken = "token" // an API token
	AMRJWT   = "jwt"   // an identity provider's JWT
)

// Prefixes of Identity.UserID for who is not a user.
const (
	ServicePrefix = "service:" // then the service name
	JWTPrefix     = "jwt:"     // then HOST:SUB
)

// Identity is who a verified bearer credential speaks for. Treat it as
// read-only: a cached Identity is shared by the requests that present the
// same credential.
type Identity struct {
	// UserID is the user's id for a user's API token, "service:NAME" for a
	// service token, "jwt:HOST:SUB" for a JWT (HOST the issuer URL's host,
	// with its port when it has one).
	UserID string
	// Email is the user's email, the JWT's email unless its email_verified
	// is false, and empty for a service token.
	Email string
	// Groups are a service token's groups, or "oidc:GROUP" for each entry
	// of a JWT's groups claim; none for a user's token.
	Groups []string
	// AMR is AMRToken or AMRJWT.
	AMR string
	// TokenID is the public id of an API token (logs), empty for a JWT.
	TokenID string
	// ExpiresAt is when the credential stops: the token's expiry (zero:
	// none) or the JWT's exp.
	ExpiresAt time.Time
}

// Error kinds. Every error Verify returns matches exactly one of them with
// errors.Is, and is an *Error that says why.
var (
	// ErrNoCredential: the request carries no bearer credential (no
	// Authorization header, or another scheme): judge it as if it had none.
	ErrNoCredential = errors.New("bearer: no bearer credential")
	// ErrInvalid: a bearer credential that does not authenticate
	// (malformed, oversized, unknown, revoked, expired, its owner disabled,
	// a bad signature or claim): 401 invalid_token.
	ErrInvalid = errors.New("bearer: invalid token")
	// ErrUnavailable: the credential could not be checked now (the store or
	// the issuer's key set did not answer): 503, never a pass.
	ErrUnavailable = errors.New("bearer: token cannot be checked now")
)

// Reasons of an Error, for logs and metrics. None carries the credential.
const (
	ReasonMalformed     = "malformed"      // the header is not "Bearer" and one token68
	ReasonTooLarge      = "too_large"      // longer than MaxCredential
	ReasonUnknownShape  = "unknown_shape"  // neither an API token nor a JWT of a configured issuer
	ReasonUnknownToken  = "unknown_token"  // no such API token (never made, revoked, its user deleted)
	ReasonExpired       = "expired"        // an expired API token or JWT
	ReasonOwnerDisabled = "owner_disabled" // the API token's user is disabled
	ReasonIssuer        = "issuer"         // a JWT of an issuer not configured
	ReasonKey           = "key"            // no key of the issuer's key set fits the JWT
	ReasonSignature     = "signature"      // the JWT's signature or algorithm is refused
	ReasonClaims        = "claims"         // iss, aud, nbf, iat, sub refused
	ReasonStore         = "store"          // the store did not answer (ErrUnavailable)
	ReasonKeySet        = "key_set"        // the key set could not be fetched (ErrUnavailable)
)

// Error is a refusal of Verify: Kind is ErrNoCredential, ErrInvalid or
// ErrUnavailable, Reason one of the Reason constants, Err the cause (never
// holding the credential).
type Error struct {
	Kind   error
	Reason string
	Err    error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%v (%s): %v", e.Kind, e.Reason, e.Err)
	}
	return fmt.Sprintf("%v (%s)", e.Kind, e.Reason)
}

// Unwrap lets errors.Is match the Kind and the cause.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

func invalid(reason string, cause error) error {
	return &Error{Kind: ErrInvalid, Reason: reason, Err: cause}
}

func unavailable(reason string, cause error) error {
	return &Error{Kind: ErrUnavailable, Reason: reason, Err: cause}
}

var errNoCredential = &Error{Kind: ErrNoCredential, Reason: "none"}

// TokenStore is what the Verifier needs of the store: the lookup of an API
// token by its hash (with its owner's state) and the batched write of last
// use. storage/cache and storage/bolt answer the lookup from memory.
type TokenStore interface {
	APITokenByHash(ctx context.Context, h storage.Hash) (storage.APIToken, storage.APITokenOwner, error)
	TouchAPITokens(ctx context.Context, lastUsed map[storage.Hash]time.Time) error
}

// Config configures New.
type Config struct {
	// Tokens looks API tokens up; nil refuses every API token.
	Tokens TokenStore
	// Issuers are the issuer URLs (--bearer-jwt-issuer) whose JWTs are
	// accepted, compared with a JWT's iss exactly; none: no JWT is.
	Issuers []string
	// Audience (--bearer-jwt-audience) must be among a JWT's aud; required
	// with Issuers.
	Audience string
	// GroupsClaim is the JWT claim whose entries become "oidc:GROUP"
	// (--oidc-groups-claim); default "groups".
	GroupsClaim string
	// HTTPClient fetches discovery documents and key sets; default a
	// client bounded in time, in answer size (1 MiB) and to same-origin
	// redirects (NewHTTPClient).
	HTTPClient *http.Client
	// Clock is the time (default time.Now); the proxy's clock.
	Clock  func() time.Time
	Logger *slog.Logger // default slog.Default()
}

// Verifier checks bearer credentials. It is safe for concurrent use; Run
// writes the last-use times it records and keeps the key sets fresh.
type Verifier struct {
	tokens      TokenStore
	issuers     map[string]*issuer
	audience    string
	groupsClaim string
	now         func() time.Time
	log         *slog.Logger

	jwts     jwtCache
	lastUsed lastUsed

	signatures    atomic.Uint64
	jwtCacheHits  atomic.Uint64
	keySetFetches atomic.Uint64
}

// New checks cfg and returns a Verifier. It fetches nothing: key sets are
// fetched by Run, or at the first JWT of their issuer.
func New(cfg Config) (*Verifier, error) {
	v := &Verifier{
		tokens: cfg.Tokens, audience: cfg.Audience, groupsClaim: cfg.GroupsClaim,
		now: cfg.Clock, log: cfg.Logger, issuers: map[string]*issuer{},
	}
	if v.now == nil {
		v.now = time.Now
	}
	if v.log == nil {
		v.log = slog.Default()
	}
	if v.groupsClaim == "" {
		v.groupsClaim = "groups"
	}
	client := cfg.HTTPClient
	if client == nil {
		client = NewHTTPClient()
	}
	if len(cfg.Issuers) > 0 && cfg.Audience == "" {
		return nil, errors.New("bearer: JWT issuers need an audience")
	}
	hosts := map[string]string{}
	for _, raw := range cfg.Issuers {
		is, err := newIssuer(raw, client, v)
		if err != nil {
			return nil, err
		}
		if v.issuers[is.url] != nil {
			return nil, fmt.Errorf("bearer: issuer %s given twice", is.url)
		}
		// A JWT acts as jwt:HOST:SUB: two issuers of one host name (two
		// realms, or two ports, since a sub may hold ":") would make
		// their users of one sub one identity.
		name := hostName(is.host)
		if other, ok := hosts[name]; ok {
			return nil, fmt.Errorf("bearer: issuers %s and %s share the host %s: their users would share jwt:%s:SUB identities", other, is.url, name, name)
		}
		hosts[name] = is.url
		v.issuers[is.url] = is
	}
	return v, nil
}

// Verify judges the request's Authorization header values (all of them,
// as r.Header.Values("Authorization") gives them). It returns the Identity
// of a valid credential, or an *Error: ErrNoCredential when there is no
// bearer credential, ErrInvalid, or ErrUnavailable.
func (v *Verifier) Verify(ctx context.Context, authorization []string) (Identity, error) {
	credential, err := Credential(authorization)
	if err != nil {
		return Identity{}, err
	}
	switch {
	case storage.IsAPITokenShape(credential):
		return v.apiToken(ctx, credential)
	case len(v.issuers) > 0 && isJWTShape(credential):
		return v.jwt(ctx, credential)
	}
	return Identity{}, invalid(ReasonUnknownShape, nil)
}

// Stats are counters since New.
type Stats struct {
	// SignatureChecks counts JWT signatures verified (once per JWT while
	// it is cached).
	SignatureChecks uint64
	// JWTCacheHits counts JWTs answered from the cache of verified ones.
	JWTCacheHits uint64
	// KeySetFetches counts fetches of a key set (discovery included),
	// successful or not.
	KeySetFetches uint64
}

// Stats returns the counters.
func (v *Verifier) Stats() Stats {
	return Stats{SignatureChecks: v.signatures.Load(), JWTCacheHits: v.jwtCacheHits.Load(), KeySetFetches: v.keySetFetches.Load()}
}

// Run writes the recorded last-use times every FlushInterval and keeps
// every issuer's key set fresh (fetched at once, then again when it is
// KeySetRefresh old), until ctx ends; then it writes once more, with up to
// five seconds to finish, and returns that write's error.
func (v *Verifier) Run(ctx context.Context) error {
	for _, is := range v.issuers {
		go is.refresh(ctx, 0)
	}
	flush := time.NewTicker(FlushInterval)
	defer flush.Stop()
	refresh := time.NewTicker(KeySetRefresh / 4)
	defer refresh.Stop()
	for {
		select {
		case <-flush.C:
			if err := v.FlushLastUsed(ctx); err != nil {
				v.log.LogAttrs(ctx, slog.LevelWarn, "API token last-use write failed", slog.String("error", err.Error()))
			}
		case <-refresh.C:
			for _, is := range v.issuers {
				go is.refresh(ctx, KeySetRefresh)
			}
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			return v.FlushLastUsed(final)
		}
	}
}
