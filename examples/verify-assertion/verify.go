// Command verify-assertion is an upstream app that trusts Gatehouse's signed
// identity assertion instead of the plain X-Forwarded-User header: every
// request must carry an X-Gatehouse-Jwt-Assertion that verifies against
// Gatehouse's published keys, else it gets 401. Copy verify.go into your
// app; verify.py is the same in Python (PyJWT).
//
//	go run ./examples/verify-assertion \
//	    --jwks http://127.0.0.1:9090/jwks.json --issuer http://localhost:8080 \
//	    --audience http://localhost:8080 --listen 127.0.0.1:3000
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Identity is what the app learns from a verified assertion.
type Identity struct {
	Subject  string   `json:"sub"`
	Email    string   `json:"email"`
	Groups   []string `json:"groups"`
	AMR      []string `json:"amr"`
	Session  string   `json:"sid"`
	AuthTime int64    `json:"auth_time"`
}

// Verifier checks assertions against Gatehouse's JWKS: ES256 only, the kid
// must be published, then iss, aud, exp and nbf (one minute of leeway). The
// key set is cached and fetched again when a token names an unknown kid
// (after a rotation), at most once every ten seconds.
type Verifier struct {
	JWKSURL  string // Gatehouse's /auth/.well-known/jwks.json or the admin /jwks.json
	Issuer   string // Gatehouse's --base-url
	Audience string // Gatehouse's --assertion-audience (default: its --base-url)
	Client   *http.Client
	Now      func() time.Time

	mu      sync.Mutex
	keys    jose.JSONWebKeySet
	fetched time.Time
}

// Verify returns the identity of a valid token.
func (v *Verifier) Verify(token string) (Identity, error) {
	parsed, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return Identity{}, fmt.Errorf("parse: %w", err)
	}
	key, err := v.key(parsed.Headers[0].KeyID)
	if err != nil {
		return Identity{}, err
	}
	var std jwt.Claims
	var id Identity
	if err := parsed.Claims(key.Key, &std, &id); err != nil {
		return Identity{}, fmt.Errorf("signature: %w", err)
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	expected := jwt.Expected{Issuer: v.Issuer, AnyAudience: jwt.Audience{v.Audience}, Time: now()}
	if std.Expiry == nil {
		return Identity{}, errors.New("no exp")
	}
	if err := std.ValidateWithLeeway(expected, time.Minute); err != nil {
		return Identity{}, err
	}
	if id.Subject == "" {
		return Identity{}, errors.New("no sub")
	}
	return id, nil
}

func (v *Verifier) key(kid string) (jose.JSONWebKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if keys := v.keys.Key(kid); len(keys) == 1 {
		return keys[0], nil
	}
	if time.Since(v.fetched) < 10*time.Second {
		return jose.JSONWebKey{}, fmt.Errorf("unknown kid %q", kid)
	}
	client := v.Client
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	res, err := client.Get(v.JWKSURL)
	if err != nil {
		return jose.JSONWebKey{}, fmt.Errorf("fetch JWKS: %w", err)
	}
	defer res.Body.Close()
	var set jose.JSONWebKeySet
	if res.StatusCode != http.StatusOK {
		return jose.JSONWebKey{}, fmt.Errorf("fetch JWKS: status %d", res.StatusCode)
	}
	if err := json.NewDecoder(res.Body).Decode(&set); err != nil {
		return jose.JSONWebKey{}, fmt.Errorf("decode JWKS: %w", err)
	}
	v.keys, v.fetched = set, time.Now()
	if keys := v.keys.Key(kid); len(keys) == 1 && keys[0].Valid() && keys[0].IsPublic() {
		return keys[0], nil
	}
	return jose.JSONWebKey{}, fmt.Errorf("unknown kid %q", kid)
}

// Middleware lets only requests with a valid assertion through.
func (v *Verifier) Middleware(next func(http.ResponseWriter, *http.Request, Identity)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokens := r.Header.Values("X-Gatehouse-Jwt-Assertion")
		if len(tokens) != 1 {
			http.Error(w, "missing identity assertion", http.StatusUnauthorized)
			return
		}
		id, err := v.Verify(tokens[0])
		if err != nil {
			http.Error(w, "invalid identity assertion", http.StatusUnauthorized)
			return
		}
		next(w, r, id)
	})
}
