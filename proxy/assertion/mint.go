package assertion

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// DefaultTTL is the assertion lifetime when Config.TTL is zero.
const DefaultTTL = 5 * time.Minute

// Config holds what an Issuer needs. Keys, Issuer and Audience are required.
type Config struct {
	Keys     *Keys
	Issuer   string        // the iss claim: --base-url
	Audience string        // the aud claim: --assertion-audience
	TTL      time.Duration // token lifetime; default DefaultTTL
	Clock    func() time.Time
}

// Issuer mints the assertion of a session and caches it in memory: a
// signature is made once per session and half lifetime, not per request. A
// cached token is handed out while more than half its lifetime is left, and
// dropped when the gate reports its session gone (Drop) or when it expires
// (Sweep). Safe for concurrent use.
type Issuer struct {
	keys     *Keys
	issuer   string
	audience string
	ttl      time.Duration
	clock    func() time.Time
	shards   [16]cacheShard
	minted   atomic.Uint64
}

type cacheShard struct {
	mu     sync.Mutex
	tokens map[storage.Hash]cachedToken
	_      [64 - 16]byte // one shard per cache line: no false sharing between cores
}

type cachedToken struct {
	token   string
	userID  string
	email   string    // the claims the session can change under the same id:
	groups  string    // a token minted before a change is not handed out after it
	renewAt time.Time // half the lifetime
	expires time.Time
}

// New checks cfg and builds the Issuer.
func New(cfg Config) (*Issuer, error) {
	if cfg.Keys == nil || cfg.Issuer == "" || cfg.Audience == "" {
		return nil, errors.New("assertion: Keys, Issuer and Audience are required")
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return &Issuer{keys: cfg.Keys, issuer: cfg.Issuer, audience: cfg.Audience, ttl: cfg.TTL, clock: cfg.Clock}, nil
}

// Claims are the assertion's claims (contract, "Signed identity for the
// upstream").
type Claims struct {
	Issuer        string   `json:"iss"`
	Audience      string   `json:"aud"`
	Subject       string   `json:"sub"` // user id
	Email         string   `json:"email"`
	EmailVerified bool     `json:"email_verified"`
	Groups        []string `json:"groups"`
	AMR           []string `json:"amr,omitempty"` // how the session signed in: storage.Session.AMR
	SessionID     string   `json:"sid"`           // derived from the session, neither its id nor its stored hash
	AuthTime      int64    `json:"auth_time"`
	IssuedAt      int64    `json:"iat"`
	NotBefore     int64    `json:"nbf"`
	Expiry        int64    `json:"exp"`
	ID            string   `json:"jti"`
}

// Token returns the session's assertion, minting one only when none is
// cached, the cached one has less than half its lifetime left, or the
// session's email or groups changed since it was minted (a provider check
// took a group away: the next request's assertion says so).
func (a *Issuer) Token(s storage.Session) (string, error) {
	now := a.clock()
	sh := &a.shards[s.IDHash[0]%uint8(len(a.shards))]
	sh.mu.Lock()
	c, ok := sh.tokens[s.IDHash]
	sh.mu.Unlock()
	if ok && c.userID == s.UserID && c.email == s.Email && c.groups == s.Groups && now.Before(c.renewAt) {
		return c.token, nil
	}
	c, err := a.mint(s, now)
	if err != nil {
		return "", err
	}
	sh.mu.Lock()
	if sh.tokens == nil {
		sh.tokens = make(map[storage.Hash]cachedToken)
	}
	sh.tokens[s.IDHash] = c
	sh.mu.Unlock()
	return c.token, nil
}

// Minted reports how many tokens were signed so far.
func (a *Issuer) Minted() uint64 { return a.minted.Load() }

// Drop forgets the session's token: the gate found the session gone.
func (a *Issuer) Drop(idHash storage.Hash) {
	sh := &a.shards[idHash[0]%uint8(len(a.shards))]
	sh.mu.Lock()
	delete(sh.tokens, idHash)
	sh.mu.Unlock()
}

// Cached reports whether a token of the session is cached (for tests and
// the account of memory).
func (a *Issuer) Cached(idHash storage.Hash) bool {
	sh := &a.shards[idHash[0]%uint8(len(a.shards))]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	_, ok := sh.tokens[idHash]
	return ok
}

// Sweep drops every expired token and reports how many are left; sessions
// nobody used within a lifetime do not stay in memory.
func (a *Issuer) Sweep() int {
	now := a.clock()
	left := 0
	for i := range a.shards {
		sh := &a.shards[i]
		sh.mu.Lock()
		for h, c := range sh.tokens {
			if !now.Before(c.expires) {
				delete(sh.tokens, h)
			}
		}
		left += len(sh.tokens)
		sh.mu.Unlock()
	}
	return left
}

func (a *Issuer) mint(s storage.Session, now time.Time) (cachedToken, error) {
	sg, err := a.keys.signer(now)
	if err != nil {
		return cachedToken{}, err
	}
	now = now.Truncate(time.Second)
	exp := now.Add(a.ttl)
	if !s.ExpiresAt.IsZero() && s.ExpiresAt.Before(exp) {
		exp = s.ExpiresAt // never outlives the session
	}
	var jti [16]byte
	_, _ = rand.Read(jti[:])
	claims := Claims{
		Issuer: a.issuer, Audience: a.audience,
		Subject: s.UserID, Email: s.Email,
		// Every account's address was entered by an administrator or
		// verified by the provider before the account was made; a
		// service token, and a JWT without a verified email, have none.
		EmailVerified: s.Email != "",
		Groups:        splitGroups(s.Groups),
		AMR:           s.AMR(),
		SessionID:     sessionClaim(s.IDHash),
		AuthTime:      s.CreatedAt.Unix(),
		IssuedAt:      now.Unix(),
		NotBefore:     now.Unix(),
		Expiry:        exp.Unix(),
		ID:            base64.RawURLEncoding.EncodeToString(jti[:]),
	}
	token, err := jwt.Signed(sg.jose).Claims(claims).Serialize()
	if err != nil {
		return cachedToken{}, err
	}
	a.minted.Add(1)
	return cachedToken{token: token, userID: s.UserID, email: s.Email, groups: s.Groups, renewAt: now.Add(exp.Sub(now) / 2), expires: exp}, nil
}

// sessionClaim is the sid: a hash of the stored hash under its own label,
// stable for the session on every replica, yet neither the session id nor
// the hash the store keeps (and no way back to either).
func sessionClaim(idHash storage.Hash) string {
	h := sha256.New()
	h.Write([]byte("gatehouse assertion sid\x00"))
	h.Write(idHash[:])
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}

func splitGroups(groups string) []string {
	out := []string{}
	for g := range strings.SplitSeq(groups, ",") {
		if g = strings.TrimSpace(g); g != "" {
			out = append(out, g)
		}
	}
	return out
}
