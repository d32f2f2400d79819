package provider

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// IDTokenError is an ID token that fails a check (400 invalid_id_token).
type IDTokenError struct{ reason string }

func (e IDTokenError) Error() string { return "id token: " + e.reason }

// idTokenVerifier checks the ID tokens of one provider (ID1, OA2): the
// signature against the provider's JWKS (go-oidc fetches and caches it,
// and fetches it again when a token names an unknown kid), then iss, aud,
// exp (go-oidc), then azp and the flow's nonce (here). No JWT is parsed by
// hand.
type idTokenVerifier struct {
	verifier *oidc.IDTokenVerifier
	clientID string
	now      func() time.Time
}

// newIDTokenVerifier verifies tokens of issuer for clientID, signed by a key
// of keys with one of algs (nil: RS256), on the clock now.
func newIDTokenVerifier(issuer string, keys oidc.KeySet, clientID string, algs []string, now func() time.Time) *idTokenVerifier {
	return &idTokenVerifier{
		clientID: clientID,
		now:      now,
		verifier: oidc.NewVerifier(issuer, keys, &oidc.Config{
			ClientID:             clientID,
			SupportedSigningAlgs: algs,
			Now:                  now,
		}),
	}
}

// idTokenClaims are the claims Gatehouse reads beyond go-oidc's own.
type idTokenClaims struct {
	AuthorizedParty string       `json:"azp"`
	Email           string       `json:"email"`
	EmailVerified   flexibleBool `json:"email_verified"`
	HostedDomain    string       `json:"hd"`
	SessionID       string       `json:"sid"` // the OpenID Provider's session (back-channel logout)
}

// verify checks raw and returns the token and its claims. A token whose
// audience has several entries (or that names an azp) must name this
// client as azp; at sign-in its nonce must be the flow's (a refreshed
// token has no flow to match).
func (v *idTokenVerifier) verify(ctx context.Context, raw string, check idCheck) (*oidc.IDToken, idTokenClaims, error) {
	var c idTokenClaims
	if raw == "" {
		return nil, c, IDTokenError{"missing from the token response"}
	}
	tok, err := v.verifier.Verify(ctx, raw)
	if err != nil {
		var expired *oidc.TokenExpiredError
		if errors.As(err, &expired) {
			return nil, c, IDTokenError{"expired"}
		}
		return nil, c, IDTokenError{clip(err.Error(), 200)}
	}
	if !v.now().Before(tok.Expiry) {
		// go-oidc lets a token live through its exp second; OIDC Core
		// 3.1.3.7 wants the time before exp.
		return nil, c, IDTokenError{"expired"}
	}
	if err := tok.Claims(&c); err != nil {
		return nil, c, IDTokenError{"claims are not the expected JSON"}
	}
	if (len(tok.Audience) > 1 || c.AuthorizedParty != "") && c.AuthorizedParty != v.clientID {
		return nil, c, IDTokenError{"authorized party is not this client"}
	}
	if !check.refreshed && (check.nonce == "" || subtle.ConstantTimeCompare([]byte(tok.Nonce), []byte(check.nonce)) != 1) {
		return nil, c, IDTokenError{"nonce does not match"}
	}
	if tok.Subject == "" {
		return nil, c, IDTokenError{"sub missing"}
	}
	return tok, c, nil
}

// flexibleBool is a JSON boolean, or the strings "true"/"false" that some
// Google tokens carried. Anything else, and a missing claim, is false.
type flexibleBool bool

func (f *flexibleBool) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v := v.(type) {
	case bool:
		*f = flexibleBool(v)
	case string:
		*f = flexibleBool(v == "true")
	default:
		*f = false
	}
	return nil
}

// containsFold reports whether list holds s, ignoring case.
func containsFold(list []string, s string) (string, bool) {
	i := slices.IndexFunc(list, func(e string) bool { return equalFold(e, s) })
	if i < 0 {
		return "", false
	}
	return list[i], true
}
