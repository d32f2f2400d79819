package assertion

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
)

var start = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

type env struct {
	store  *bolt.Store
	clock  *webtest.Clock
	keys   *Keys
	issuer *Issuer
	jwks   *httptest.Server
}

const (
	testIssuer   = "https://gate.example.com"
	testAudience = "https://app.example.com"
)

func newEnv(t *testing.T) *env {
	t.Helper()
	store, err := bolt.Open(filepath.Join(t.TempDir(), "g.db"), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	e := &env{store: store, clock: webtest.NewClock(start)}
	if e.keys, err = NewKeys(t.Context(), store, e.clock.Now, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if e.issuer, err = New(Config{Keys: e.keys, Issuer: testIssuer, Audience: testAudience, Clock: e.clock.Now}); err != nil {
		t.Fatal(err)
	}
	e.jwks = httptest.NewServer(e.keys)
	t.Cleanup(e.jwks.Close)
	return e
}

func session(n byte) storage.Session {
	s := storage.Session{
		UserID: "0123456789abcdef0123456789abcdef", Email: "ada@example.com",
		CreatedAt: start.Add(-time.Hour), ExpiresAt: start.Add(24 * time.Hour),
		Method: "github", Groups: "github:acme,github:acme/ops",
	}
	s.IDHash = storage.HashSecret("session-id-" + string(rune('a'+n)))
	return s
}

// verify checks token the way an app does: fetch the JWKS over HTTP, pick
// the key by kid, check the ES256 signature, then iss, aud and exp at now.
func verify(t *testing.T, jwksURL, token string, now time.Time) (Claims, error) {
	t.Helper()
	res, err := http.Get(jwksURL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(res.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	parsed, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return Claims{}, err
	}
	keys := set.Key(parsed.Headers[0].KeyID)
	if len(keys) != 1 {
		return Claims{}, errUnknownKid
	}
	var std jwt.Claims
	var c Claims
	if err := parsed.Claims(keys[0].Key, &std, &c); err != nil {
		return Claims{}, err
	}
	err = std.ValidateWithLeeway(jwt.Expected{Issuer: testIssuer, AnyAudience: jwt.Audience{testAudience}, Time: now}, 0)
	return c, err
}

type verifyError string

func (e verifyError) Error() string { return string(e) }

const errUnknownKid = verifyError("unknown kid")

func TestAssertionVerifiesLikeAnApp(t *testing.T) {
	e := newEnv(t)
	s := session(1)
	token, err := e.issuer.Token(s)
	if err != nil {
		t.Fatal(err)
	}
	c, err := verify(t, e.jwks.URL, token, e.clock.Now())
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	want := Claims{
		Issuer: testIssuer, Audience: testAudience, Subject: s.UserID, Email: s.Email,
		EmailVerified: true, Groups: []string{"github:acme", "github:acme/ops"}, AMR: []string{"github"},
		SessionID: c.SessionID, AuthTime: s.CreatedAt.Unix(), IssuedAt: start.Unix(), NotBefore: start.Unix(),
		Expiry: start.Add(DefaultTTL).Unix(), ID: c.ID,
	}
	if g, w := mustJSON(t, c), mustJSON(t, want); g != w {
		t.Fatalf("claims\n got %s\nwant %s", g, w)
	}
	if len(c.ID) < 20 {
		t.Fatalf("jti %q too short", c.ID)
	}
	// sid is neither the session id nor the stored hash, in any encoding.
	h := s.IDHash[:]
	for _, secret := range []string{
		"session-id-b", hexOf(s.IDHash), base64.RawURLEncoding.EncodeToString(h),
		base64.StdEncoding.EncodeToString(h), base64.RawURLEncoding.EncodeToString(h[:16]),
		hex.EncodeToString(h[:16]),
	} {
		if c.SessionID == secret || strings.Contains(token, secret) {
			t.Fatalf("token carries the session id or its hash (%q)", secret)
		}
	}
	if len(c.SessionID) < 20 {
		t.Fatalf("sid %q too short to be unique", c.SessionID)
	}
	if c.SessionID != sessionClaim(s.IDHash) {
		t.Fatal("sid is not stable for the session")
	}

	// Expired: refused at exp.
	if _, err := verify(t, e.jwks.URL, token, start.Add(DefaultTTL+time.Second)); err == nil {
		t.Fatal("expired token verified")
	}
	// Wrong audience or issuer: refused.
	other, _ := New(Config{Keys: e.keys, Issuer: "https://evil.example", Audience: testAudience, Clock: e.clock.Now})
	bad, _ := other.Token(session(2))
	if _, err := verify(t, e.jwks.URL, bad, e.clock.Now()); err == nil {
		t.Fatal("foreign issuer verified")
	}
	other, _ = New(Config{Keys: e.keys, Issuer: testIssuer, Audience: "https://other.app", Clock: e.clock.Now})
	bad, _ = other.Token(session(3))
	if _, err := verify(t, e.jwks.URL, bad, e.clock.Now()); err == nil {
		t.Fatal("foreign audience verified")
	}
	// A key that is not in the JWKS: refused.
	store2, _ := bolt.Open(filepath.Join(t.TempDir(), "h.db"), bolt.Options{NoSync: true})
	defer store2.Close()
	foreignKeys, _ := NewKeys(t.Context(), store2, e.clock.Now, nil)
	foreign, _ := New(Config{Keys: foreignKeys, Issuer: testIssuer, Audience: testAudience, Clock: e.clock.Now})
	bad, _ = foreign.Token(s)
	if _, err := verify(t, e.jwks.URL, bad, e.clock.Now()); err == nil {
		t.Fatal("token of a foreign key verified")
	}
}

func TestJWKSAnswer(t *testing.T) {
	e := newEnv(t)
	res, err := http.Get(e.jwks.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if cc := res.Header.Get("Cache-Control"); !strings.Contains(cc, "max-age=300") {
		t.Fatalf("Cache-Control %q", cc)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 1 || !set.Keys[0].IsPublic() || set.Keys[0].Algorithm != "ES256" || set.Keys[0].KeyID == "" {
		t.Fatalf("JWKS %s", body)
	}
	if strings.Contains(string(body), `"d"`) {
		t.Fatalf("JWKS publishes a private part: %s", body)
	}
}

func TestTokenCachedPerSession(t *testing.T) {
	e := newEnv(t)
	s := session(1)
	first, _ := e.issuer.Token(s)
	e.clock.Advance(DefaultTTL/2 - time.Second)
	if again, _ := e.issuer.Token(s); again != first {
		t.Fatal("re-minted with more than half the lifetime left")
	}
	if other, _ := e.issuer.Token(session(2)); other == first {
		t.Fatal("two sessions share a token")
	}
	if n := e.issuer.Minted(); n != 2 {
		t.Fatalf("%d tokens signed for two sessions", n)
	}
	e.clock.Advance(time.Second)
	renewed, _ := e.issuer.Token(s)
	if renewed == first {
		t.Fatal("not re-minted at half the lifetime")
	}
	if _, err := verify(t, e.jwks.URL, renewed, e.clock.Now()); err != nil {
		t.Fatalf("renewed token: %v", err)
	}
	// A revoked session's token is gone with it.
	e.issuer.Drop(s.IDHash)
	if e.issuer.Cached(s.IDHash) {
		t.Fatal("dropped token still cached")
	}
	// Sweep forgets tokens past their expiry.
	e.clock.Advance(DefaultTTL)
	if left := e.issuer.Sweep(); left != 0 {
		t.Fatalf("%d expired tokens kept", left)
	}
}

// A session whose groups change under the same id (a provider check took
// a group away) gets a new assertion at its next request, with the new
// groups, not the cached one with the old.
func TestTokenFollowsGroupChange(t *testing.T) {
	e := newEnv(t)
	s := session(1)
	s.Groups = "oidc:admins,oidc:staff"
	first, _ := e.issuer.Token(s)
	s.Groups = "oidc:staff"
	after, _ := e.issuer.Token(s)
	if after == first {
		t.Fatal("the cached assertion with the removed group was handed out after the change")
	}
	claims, err := verify(t, e.jwks.URL, after, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(claims.Groups) != 1 || claims.Groups[0] != "oidc:staff" {
		t.Fatalf("groups after the change: %q", claims.Groups)
	}
	if again, _ := e.issuer.Token(s); again != after {
		t.Fatal("re-minted without a change")
	}
}

func TestTokenNeverOutlivesSession(t *testing.T) {
	e := newEnv(t)
	s := session(1)
	s.ExpiresAt = start.Add(time.Minute)
	token, _ := e.issuer.Token(s)
	c, err := verify(t, e.jwks.URL, token, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if c.Expiry != s.ExpiresAt.Unix() {
		t.Fatalf("exp %d, want the session's end %d", c.Expiry, s.ExpiresAt.Unix())
	}
}

func TestRotationKeepsOldTokensValid(t *testing.T) {
	e := newEnv(t)
	s := session(1)
	s.ExpiresAt = start.Add(365 * 24 * time.Hour)
	oldToken, _ := e.issuer.Token(s)
	oldKid := kid(t, oldToken)

	// A day before the period ends, the next key is published, not used.
	e.clock.Advance(RotationPeriod - PublishAhead)
	if err := e.keys.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(jwks(t, e)); n != 2 {
		t.Fatalf("%d keys published a day before rotation, want 2", n)
	}
	e.issuer.Drop(s.IDHash)
	tok, _ := e.issuer.Token(s)
	if kid(t, tok) != oldKid {
		t.Fatal("next key signs before its time")
	}

	// At the end of the period the new key signs; the old one still verifies.
	e.clock.Advance(PublishAhead)
	if err := e.keys.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.issuer.Drop(s.IDHash)
	tok, _ = e.issuer.Token(s)
	if kid(t, tok) == oldKid {
		t.Fatal("old key still signs after rotation")
	}
	if _, err := verify(t, e.jwks.URL, tok, e.clock.Now()); err != nil {
		t.Fatalf("new token: %v", err)
	}
	// The old key's tokens verify (signature and key) while it is kept.
	e.clock.Advance(RetiredKept - time.Minute)
	if err := e.keys.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := verify(t, e.jwks.URL, oldToken, start); err != nil {
		t.Fatalf("token of the retired key, within %s: %v", RetiredKept, err)
	}
	// After RetiredKept the old key is gone from the store and the JWKS.
	e.clock.Advance(time.Minute)
	if err := e.keys.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := verify(t, e.jwks.URL, oldToken, start); err != errUnknownKid {
		t.Fatalf("token of a key retired %s ago: %v, want unknown kid", RetiredKept, err)
	}
	stored, _ := e.store.SigningKeys(t.Context())
	if len(stored) != 1 {
		t.Fatalf("%d keys stored, want 1", len(stored))
	}
}

func TestManualRotate(t *testing.T) {
	e := newEnv(t)
	s := session(1)
	oldToken, _ := e.issuer.Token(s)
	id, err := e.keys.Rotate(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	if err := e.keys.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.issuer.Drop(s.IDHash)
	tok, _ := e.issuer.Token(s)
	if kid(t, tok) != id {
		t.Fatalf("after rotate, signed by %s, want %s", kid(t, tok), id)
	}
	if _, err := verify(t, e.jwks.URL, oldToken, e.clock.Now()); err != nil {
		t.Fatalf("token of the previous key after rotate: %v", err)
	}
}

func TestPlan(t *testing.T) {
	day := 24 * time.Hour
	k := func(id string, from time.Duration) storage.SigningKey {
		return storage.SigningKey{ID: id, ActiveFrom: start.Add(from)}
	}
	cases := []struct {
		name   string
		keys   []storage.SigningKey
		now    time.Duration
		add    bool
		from   time.Duration
		retire []string
	}{
		{"no key", nil, 0, true, 0, nil},
		// Another replica's first key, made an instant after this replica
		// read its clock (or by a clock a little ahead): it is the key, not
		// a reason to add a second one.
		{"first key a moment ahead", []storage.SigningKey{k("a", 50*time.Millisecond)}, 0, false, 0, nil},
		{"first key beyond the skew", []storage.SigningKey{k("a", ClockSkew+time.Second)}, 0, true, 0, nil},
		{"fresh key", []storage.SigningKey{k("a", 0)}, day, false, 0, nil},
		{"just before publishing", []storage.SigningKey{k("a", 0)}, 29*day - time.Second, false, 0, nil},
		{"publish the next", []storage.SigningKey{k("a", 0)}, 29 * day, true, 30 * day, nil},
		{"next already published", []storage.SigningKey{k("a", 0), k("b", 30*day)}, 29*day + time.Hour, false, 0, nil},
		{"long down: next a day from now", []storage.SigningKey{k("a", 0)}, 90 * day, true, 91 * day, nil},
		{"retired kept", []storage.SigningKey{k("a", 0), k("b", 30*day)}, 37*day - time.Second, false, 0, nil},
		{"retired removed", []storage.SigningKey{k("a", 0), k("b", 30*day)}, 37 * day, false, 0, []string{"a"}},
		{"two retired", []storage.SigningKey{k("a", 0), k("b", 30*day), k("c", 40*day)}, 48 * day, false, 0, []string{"a", "b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := plan(tc.keys, start.Add(tc.now))
			if p.add != tc.add || (tc.add && !p.activeFrom.Equal(start.Add(tc.from))) || strings.Join(p.retire, ",") != strings.Join(tc.retire, ",") {
				t.Fatalf("plan = %+v, want add %v from %v retire %v", p, tc.add, tc.from, tc.retire)
			}
		})
	}
}

func kid(t *testing.T, token string) string {
	t.Helper()
	parsed, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	return parsed.Headers[0].KeyID
}

func jwks(t *testing.T, e *env) []jose.JSONWebKey {
	t.Helper()
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(e.keys.set.Load().jwks, &set); err != nil {
		t.Fatal(err)
	}
	return set.Keys
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func hexOf(h storage.Hash) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 64)
	for _, b := range h {
		out = append(out, digits[b>>4], digits[b&15])
	}
	return string(out)
}

// The first key signs even while its ActiveFrom is a moment ahead of this
// replica's clock (ClockSkew): no 503 while replicas agree on it.
func TestSignerToleratesSkewOfTheFirstKey(t *testing.T) {
	set := &keySet{signers: []signer{{id: "a", activeFrom: start.Add(50 * time.Millisecond)}}}
	k := &Keys{}
	k.set.Store(set)
	if s, err := k.signer(start); err != nil || s.id != "a" {
		t.Fatalf("signer = %v, %v; want key a", s, err)
	}
	set.signers[0].activeFrom = start.Add(ClockSkew + time.Second)
	if _, err := k.signer(start); err == nil {
		t.Fatal("a key far in the future signs")
	}
}
