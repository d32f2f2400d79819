package bearer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/gatehouse-auth/gatehouse/proxy/policy"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// signatureAlgorithms are the JWS algorithms a JWT may name: public-key
// ones only. "none" and HMAC (HS256 "signed" with a public key's bytes)
// are refused before any key is looked at.
var signatureAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

const (
	// MaxJWTCache bounds how long a verified JWT is kept: until its exp,
	// or this long, whichever is sooner.
	MaxJWTCache = 5 * time.Minute
	// clockSkew is how far a JWT's nbf and iat may be ahead of this
	// clock (the provider's clock may run ahead). exp has none: a JWT is
	// refused from its exp on.
	clockSkew = time.Minute
	// maxSubject bounds a JWT's sub.
	maxSubject = 255
)

// claims are the claims a JWT is judged by.
type claims struct {
	jwt.Claims
	Email         string          `json:"email"`
	EmailVerified json.RawMessage `json:"email_verified"`
}

// jwt judges a credential of the JWT shape: from the cache of verified
// JWTs, or by signature against the issuer's key set and then its claims.
func (v *Verifier) jwt(ctx context.Context, raw string) (Identity, error) {
	cacheKey := storage.HashSecret(raw)
	now := v.now()
	if id, ok := v.jwts.get(cacheKey, now); ok {
		v.jwtCacheHits.Add(1)
		return id, nil
	}
	tok, err := jwt.ParseSigned(raw, signatureAlgorithms)
	if err != nil {
		return Identity{}, invalid(ReasonSignature, err)
	}
	if len(tok.Headers) != 1 {
		return Identity{}, invalid(ReasonSignature, errors.New("not one signature"))
	}
	var unverified struct {
		Issuer string `json:"iss"`
	}
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return Identity{}, invalid(ReasonClaims, err)
	}
	is := v.issuers[unverified.Issuer]
	if is == nil {
		return Identity{}, invalid(ReasonIssuer, fmt.Errorf("issuer %q is not configured", clip(unverified.Issuer)))
	}
	header := tok.Headers[0]
	keys, err := is.candidates(ctx, header.KeyID, jose.SignatureAlgorithm(header.Algorithm))
	if err != nil {
		return Identity{}, err
	}
	var (
		c      claims
		all    map[string]json.RawMessage
		signer string
	)
	for _, k := range keys {
		v.signatures.Add(1)
		if err := tok.Claims(k.Key, &c, &all); err == nil {
			signer = thumbprint(k)
			break
		}
	}
	if signer == "" {
		return Identity{}, invalid(ReasonSignature, fmt.Errorf("signature does not verify with key %q of %s", clip(header.KeyID), is.url))
	}
	id, err := v.identify(is, c, all, now)
	if err != nil {
		return Identity{}, err
	}
	until := now.Add(MaxJWTCache)
	if id.ExpiresAt.Before(until) {
		until = id.ExpiresAt
	}
	v.jwts.put(cacheKey, jwtEntry{id: id, until: until, issuer: is, signer: signer}, now)
	return id, nil
}

// identify checks the verified claims and returns who the JWT speaks for.
func (v *Verifier) identify(is *issuer, c claims, all map[string]json.RawMessage, now time.Time) (Identity, error) {
	switch {
	case c.Issuer != is.url:
		return Identity{}, invalid(ReasonClaims, errors.New("iss"))
	case !c.Audience.Contains(v.audience):
		return Identity{}, invalid(ReasonClaims, fmt.Errorf("aud does not hold %q", v.audience))
	case c.Expiry == nil:
		return Identity{}, invalid(ReasonClaims, errors.New("no exp"))
	case !now.Before(c.Expiry.Time()):
		return Identity{}, invalid(ReasonExpired, fmt.Errorf("exp %s", c.Expiry.Time().UTC().Format(time.RFC3339)))
	case c.NotBefore != nil && now.Add(clockSkew).Before(c.NotBefore.Time()):
		return Identity{}, invalid(ReasonClaims, fmt.Errorf("not valid before %s", c.NotBefore.Time().UTC().Format(time.RFC3339)))
	case c.IssuedAt != nil && now.Add(clockSkew).Before(c.IssuedAt.Time()):
		return Identity{}, invalid(ReasonClaims, errors.New("issued in the future"))
	case !validSubject(c.Subject):
		return Identity{}, invalid(ReasonClaims, errors.New("sub is empty, too long or not printable ASCII"))
	}
	id := Identity{UserID: JWTPrefix + is.host + ":" + c.Subject, AMR: AMRJWT, ExpiresAt: c.Expiry.Time()}
	if email := storage.NormalizeEmail(c.Email); email != "" && !isFalse(c.EmailVerified) && storage.ValidAddress(email) {
		id.Email = email
	}
	groups, err := claimStrings(all[v.groupsClaim])
	if err != nil {
		return Identity{}, invalid(ReasonClaims, fmt.Errorf("claim %q: %w", v.groupsClaim, err))
	}
	for _, g := range groups {
		if g != "" && !strings.ContainsFunc(g, func(r rune) bool { return r == ',' || r < 0x20 || r == 0x7f }) {
			id.Groups = append(id.Groups, policy.OIDCPrefix+g)
		}
	}
	slices.Sort(id.Groups)
	id.Groups = slices.Compact(id.Groups)
	return id, nil
}

// validSubject accepts a sub that is safe in X-Forwarded-User: 1 to 255
// printable ASCII characters without space.
func validSubject(sub string) bool {
	if sub == "" || len(sub) > maxSubject {
		return false
	}
	for i := 0; i < len(sub); i++ {
		if sub[i] <= ' ' || sub[i] >= 0x7f {
			return false
		}
	}
	return true
}

// isFalse reports whether an email_verified claim says false (the boolean,
// or the string some providers send); absent or null does not.
func isFalse(raw json.RawMessage) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return false
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return !b
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && strings.EqualFold(s, "false")
}

// claimStrings reads a claim that is a list of strings or one string;
// absent or null is no entries.
func claimStrings(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err == nil {
		return many, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err != nil {
		return nil, errors.New("neither a string nor a list of strings")
	}
	return []string{one}, nil
}

// clip keeps an attacker's string short in an error.
func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}
