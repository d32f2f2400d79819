package bearer

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/proxy/idpclient"
	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
)

// testIdP is a real OpenID Provider (mockoidc) on loopback, over real
// HTTP, whose published key set the test chooses, and which counts the
// fetches of its key set.
type testIdP struct {
	*mockoidc.MockOIDC
	mu        sync.Mutex
	published []*mockoidc.Keypair
	jwksHits  atomic.Int32
	jwksBody  []byte // when set, served instead of the published keys
}

func newTestIdP(t testing.TB) *testIdP {
	t.Helper()
	idp := &testIdP{}
	oauthtest.RunOIDC(t, func(m *mockoidc.MockOIDC) {
		idp.MockOIDC, idp.published = m, []*mockoidc.Keypair{m.Keypair}
		_ = m.AddMiddleware(idp.middleware)
	})
	return idp
}

func (idp *testIdP) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != mockoidc.JWKSEndpoint {
			next.ServeHTTP(w, r)
			return
		}
		idp.jwksHits.Add(1)
		idp.mu.Lock()
		body := idp.jwksBody
		if body == nil {
			var set jose.JSONWebKeySet
			for _, k := range idp.published {
				kid, _ := k.KeyID()
				set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.PublicKey, KeyID: kid, Algorithm: "RS256", Use: "sig"})
			}
			body, _ = json.Marshal(set)
		}
		idp.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// publish makes keys the provider's published key set.
func (idp *testIdP) publish(keys ...*mockoidc.Keypair) {
	idp.mu.Lock()
	defer idp.mu.Unlock()
	idp.published = keys
}

// idToken runs the authorization code flow for user and returns the ID
// token the provider issues to its client (aud: its client id).
func (idp *testIdP) idToken(t *testing.T, user mockoidc.User) string {
	t.Helper()
	idp.QueueUser(user)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	q := url.Values{"client_id": {idp.ClientID}, "redirect_uri": {"http://127.0.0.1/callback"}, "response_type": {"code"},
		"scope": {"openid email groups"}, "state": {"s"}, "nonce": {"n"}}
	resp, err := noFollow.Get(idp.AuthorizationEndpoint() + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("authorize: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, err = http.PostForm(idp.TokenEndpoint(), url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"redirect_uri": {"http://127.0.0.1/callback"}, "client_id": {idp.ClientID}, "client_secret": {idp.ClientSecret}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tr struct {
		IDToken string `json:"id_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil || tr.IDToken == "" {
		t.Fatalf("token: %d %v", resp.StatusCode, err)
	}
	return tr.IDToken
}

// jwtEnv is a Verifier that accepts the test IdP's JWTs for audience.
type jwtEnv struct {
	idp   *testIdP
	clock *webtest.Clock
	v     *Verifier
}

const testAudience = "api://orders"

func newJWTEnv(t testing.TB, audience string) *jwtEnv {
	t.Helper()
	e := &jwtEnv{idp: newTestIdP(t), clock: webtest.NewClock(time.Now().Truncate(time.Second))}
	var err error
	e.v, err = New(Config{Issuers: []string{e.idp.Issuer()}, Audience: audience, Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// claims are valid claims for the verifier, at its clock, for sub.
func (e *jwtEnv) claims(sub string) jwt.MapClaims {
	now := e.clock.Now()
	return jwt.MapClaims{"iss": e.idp.Issuer(), "sub": sub, "aud": testAudience,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(10 * time.Minute).Unix()}
}

// sign signs claims with key (RS256, with the key's kid).
func sign(t testing.TB, key *mockoidc.Keypair, claims jwt.MapClaims) string {
	t.Helper()
	s, err := key.SignJWT(claims)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func randomKey(t *testing.T) *mockoidc.Keypair {
	t.Helper()
	k, err := mockoidc.RandomKeypair(2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A JWT of the configured issuer and audience acts as jwt:HOST:SUB, with
// its verified email and its groups as oidc:GROUP.
func TestJWTValid(t *testing.T) {
	t.Run("ID token from the provider", func(t *testing.T) {
		e := newTestIdP(t)
		clock := webtest.NewClock(time.Now())
		v, err := New(Config{Issuers: []string{e.Issuer()}, Audience: e.ClientID, Clock: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		raw := e.idToken(t, &mockoidc.MockUser{Subject: "kc-1", Email: "Kim@Example.com", EmailVerified: true, Groups: []string{"ops", "eng", "ops", "bad,group"}})
		id, err := v.Verify(t.Context(), bearer(raw))
		if err != nil {
			t.Fatal(err)
		}
		host := strings.TrimPrefix(e.Addr(), "http://")
		if id.UserID != "jwt:"+host+":kc-1" || id.Email != "kim@example.com" || id.AMR != AMRJWT ||
			strings.Join(id.Groups, ",") != "oidc:eng,oidc:ops" || id.TokenID != "" {
			t.Fatalf("identity %+v (host %s)", id, host)
		}
	})
	t.Run("email", func(t *testing.T) {
		e := newJWTEnv(t, testAudience)
		for _, tc := range []struct {
			verified any // nil: no email_verified claim
			email    string
		}{
			{true, "a@example.com"},
			{false, ""},
			{"false", ""},
			{nil, "a@example.com"},
			{"true", "a@example.com"},
		} {
			c := e.claims("s")
			c["email"] = "A@example.com"
			if tc.verified != nil {
				c["email_verified"] = tc.verified
			}
			id, err := e.v.Verify(t.Context(), bearer(sign(t, e.idp.Keypair, c)))
			if err != nil || id.Email != tc.email {
				t.Errorf("email_verified %v: %+v %v, want email %q", tc.verified, id, err, tc.email)
			}
		}
		c := e.claims("s")
		c["email"], c["groups"] = "not an address", "solo"
		id, err := e.v.Verify(t.Context(), bearer(sign(t, e.idp.Keypair, c)))
		if err != nil || id.Email != "" || strings.Join(id.Groups, ",") != "oidc:solo" {
			t.Errorf("a malformed email, one group as a string: %+v %v", id, err)
		}
	})
}

// Every JWT that is not of the configured issuer and audience, not within
// its validity, or not signed by the issuer's key with a public-key
// algorithm, is refused; none of these passes a key set fetch's limits.
func TestJWTRefused(t *testing.T) {
	e := newJWTEnv(t, testAudience)
	key := e.idp.Keypair
	kid, _ := key.KeyID()
	with := func(change func(c jwt.MapClaims)) string {
		c := e.claims("s")
		change(c)
		return sign(t, key, c)
	}
	header := func(h map[string]any) string {
		b, _ := json.Marshal(h)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	payload, _ := json.Marshal(e.claims("s"))
	body := base64.RawURLEncoding.EncodeToString(payload)
	// HS256 "signed" with the provider's public key bytes, the classic
	// algorithm confusion.
	der, _ := x509.MarshalPKIXPublicKey(key.PublicKey)
	hs := header(map[string]any{"alg": "HS256", "typ": "JWT", "kid": kid}) + "." + body
	mac := hmac.New(sha256.New, der)
	mac.Write([]byte(hs))
	hs += "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
	// A real token whose payload was changed after signing.
	good := sign(t, key, e.claims("s"))
	parts := strings.Split(good, ".")
	other, _ := json.Marshal(e.claims("admin"))
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString(other) + "." + parts[2]

	for _, tc := range []struct {
		name   string
		raw    string
		reason string
	}{
		{"wrong audience", with(func(c jwt.MapClaims) { c["aud"] = "api://billing" }), ReasonClaims},
		{"no audience", with(func(c jwt.MapClaims) { delete(c, "aud") }), ReasonClaims},
		{"wrong issuer", with(func(c jwt.MapClaims) { c["iss"] = "https://evil.example.com" }), ReasonIssuer},
		{"issuer with a trailing slash", with(func(c jwt.MapClaims) { c["iss"] = e.idp.Issuer() + "/" }), ReasonIssuer},
		{"expired", with(func(c jwt.MapClaims) { c["exp"] = e.clock.Now().Add(-time.Second).Unix() }), ReasonExpired},
		{"expires now", with(func(c jwt.MapClaims) { c["exp"] = e.clock.Now().Unix() }), ReasonExpired},
		{"no exp", with(func(c jwt.MapClaims) { delete(c, "exp") }), ReasonClaims},
		{"not yet valid", with(func(c jwt.MapClaims) { c["nbf"] = e.clock.Now().Add(2 * time.Minute).Unix() }), ReasonClaims},
		{"issued in the future", with(func(c jwt.MapClaims) { c["iat"] = e.clock.Now().Add(2 * time.Minute).Unix() }), ReasonClaims},
		{"no sub", with(func(c jwt.MapClaims) { delete(c, "sub") }), ReasonClaims},
		{"sub with a line break", with(func(c jwt.MapClaims) { c["sub"] = "a\r\nX-Forwarded-User: admin" }), ReasonClaims},
		{"groups claim of another type", with(func(c jwt.MapClaims) { c["groups"] = map[string]any{"a": 1} }), ReasonClaims},
		{"alg none, empty signature", header(map[string]any{"alg": "none"}) + "." + body + ".", ReasonUnknownShape},
		{"alg none, a signature", header(map[string]any{"alg": "none"}) + "." + body + ".c2ln", ReasonSignature},
		{"HS256 with the public key", hs, ReasonSignature},
		{"payload changed after signing", tampered, ReasonSignature},
		{"signed by a foreign key under the issuer's kid", func() string {
			foreign := randomKey(t)
			foreign.Kid = kid
			return sign(t, foreign, e.claims("s"))
		}(), ReasonSignature},
	} {
		_, err := e.v.Verify(t.Context(), bearer(tc.raw))
		wantRefused(t, tc.name, err, ErrInvalid, tc.reason)
	}
	// The valid token passes, and the key set was fetched once in all.
	if _, err := e.v.Verify(t.Context(), bearer(good)); err != nil {
		t.Fatal(err)
	}
	if n := e.idp.jwksHits.Load(); n != 1 {
		t.Errorf("key set fetched %d times, want 1", n)
	}
}

// An ID token the provider issued to its sign-in client (aud: that
// client) is refused as a bearer of an API with its own audience.
func TestJWTOfAnotherClientRefused(t *testing.T) {
	e := newJWTEnv(t, testAudience)
	raw := e.idp.idToken(t, &mockoidc.MockUser{Subject: "u", Email: "u@example.com", EmailVerified: true})
	_, err := e.v.Verify(t.Context(), bearer(raw))
	wantRefused(t, "ID token of the sign-in client", err, ErrInvalid, ReasonClaims)
}

// A verified JWT is kept until its exp or for five minutes, whichever is
// sooner: its signature is checked once, not per request.
func TestJWTSignatureCheckedOnce(t *testing.T) {
	e := newJWTEnv(t, testAudience)
	raw := sign(t, e.idp.Keypair, e.claims("s"))
	for range 20 {
		if _, err := e.v.Verify(t.Context(), bearer(raw)); err != nil {
			t.Fatal(err)
		}
	}
	if st := e.v.Stats(); st.SignatureChecks != 1 || st.JWTCacheHits != 19 {
		t.Fatalf("20 requests with one JWT: %+v, want 1 signature check and 19 cache hits", st)
	}
	e.clock.Advance(MaxJWTCache) // five minutes on: checked again
	if _, err := e.v.Verify(t.Context(), bearer(raw)); err != nil {
		t.Fatal(err)
	}
	if st := e.v.Stats(); st.SignatureChecks != 2 {
		t.Fatalf("after five minutes: %d signature checks, want 2", st.SignatureChecks)
	}
	// A JWT expiring in two minutes is kept until then, not a moment more.
	c := e.claims("short")
	c["exp"] = e.clock.Now().Add(2 * time.Minute).Unix()
	short := sign(t, e.idp.Keypair, c)
	if _, err := e.v.Verify(t.Context(), bearer(short)); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2*time.Minute - time.Second)
	if _, err := e.v.Verify(t.Context(), bearer(short)); err != nil {
		t.Fatalf("a second before its exp: %v", err)
	}
	e.clock.Advance(time.Second)
	_, err := e.v.Verify(t.Context(), bearer(short))
	wantRefused(t, "cached JWT at its exp", err, ErrInvalid, ReasonExpired)
}

// A JWT signed with a key the set lacks fetches the set again, at most
// once a minute; once the provider publishes the key, its JWTs pass.
func TestJWTUnknownKidFetchesOnceAMinute(t *testing.T) {
	e := newJWTEnv(t, testAudience)
	if _, err := e.v.Verify(t.Context(), bearer(sign(t, e.idp.Keypair, e.claims("s")))); err != nil {
		t.Fatal(err)
	}
	if n := e.idp.jwksHits.Load(); n != 1 {
		t.Fatalf("first JWT: %d key set fetches, want 1", n)
	}
	next := randomKey(t)
	_, err := e.v.Verify(t.Context(), bearer(sign(t, next, e.claims("s"))))
	wantRefused(t, "unknown kid within a minute of the first fetch", err, ErrInvalid, ReasonKey)
	if n := e.idp.jwksHits.Load(); n != 1 {
		t.Fatalf("unknown kid within a minute of the first fetch: %d key set fetches, want 1", n)
	}
	e.clock.Advance(KeySetMinInterval)
	_, err = e.v.Verify(t.Context(), bearer(sign(t, next, e.claims("s"))))
	wantRefused(t, "unknown kid", err, ErrInvalid, ReasonKey)
	if n := e.idp.jwksHits.Load(); n != 2 {
		t.Fatalf("unknown kid: %d key set fetches, want 2", n)
	}
	// A flood of made-up key ids within the minute fetches nothing more.
	for range 20 {
		_, err := e.v.Verify(t.Context(), bearer(sign(t, randomKeyWithKid(t, next), e.claims("s"))))
		wantRefused(t, "another unknown kid", err, ErrInvalid, ReasonKey)
	}
	if n := e.idp.jwksHits.Load(); n != 2 {
		t.Fatalf("20 unknown kids within the minute: %d key set fetches, want still 2", n)
	}
	// The provider rotates to the new key; a minute after the last fetch,
	// its JWTs pass.
	e.idp.publish(e.idp.Keypair, next)
	e.clock.Advance(KeySetMinInterval - time.Second)
	_, err = e.v.Verify(t.Context(), bearer(sign(t, next, e.claims("s"))))
	wantRefused(t, "new key, within the minute", err, ErrInvalid, ReasonKey)
	e.clock.Advance(time.Second)
	if _, err := e.v.Verify(t.Context(), bearer(sign(t, next, e.claims("s2")))); err != nil {
		t.Fatalf("JWT of the published new key: %v", err)
	}
	if n := e.idp.jwksHits.Load(); n != 3 {
		t.Fatalf("%d key set fetches, want 3", n)
	}
}

// randomKeyWithKid is next under a made-up kid: as cheap as an attacker's.
func randomKeyWithKid(t *testing.T, next *mockoidc.Keypair) *mockoidc.Keypair {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &mockoidc.Keypair{PrivateKey: next.PrivateKey, PublicKey: next.PublicKey, Kid: base64.RawURLEncoding.EncodeToString(b[:])}
}

// Concurrent JWTs of an unknown kid share one fetch.
func TestJWTConcurrentUnknownKidOneFetch(t *testing.T) {
	e := newJWTEnv(t, testAudience)
	next := randomKey(t)
	e.idp.publish(e.idp.Keypair, next)
	raw := sign(t, next, e.claims("s"))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			if _, err := e.v.Verify(t.Context(), bearer(raw)); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := e.idp.jwksHits.Load(); n != 1 {
		t.Fatalf("16 concurrent first JWTs: %d key set fetches, want 1", n)
	}
}

// A key the provider withdraws from its key set stops new JWTs at the
// next fetch, and the JWTs it signed that were cached go with it.
func TestJWTWithdrawnKey(t *testing.T) {
	e := newJWTEnv(t, testAudience)
	old := e.idp.Keypair
	cached := sign(t, old, e.claims("cached"))
	if _, err := e.v.Verify(t.Context(), bearer(cached)); err != nil {
		t.Fatal(err)
	}
	// The provider rotates: only the new key is published (the old one
	// leaked, say, and still signs in an attacker's hands).
	next := randomKey(t)
	e.idp.publish(next)
	e.clock.Advance(KeySetMinInterval)
	if _, err := e.v.Verify(t.Context(), bearer(sign(t, next, e.claims("new")))); err != nil {
		t.Fatalf("JWT of the new key: %v", err)
	}
	_, err := e.v.Verify(t.Context(), bearer(sign(t, old, e.claims("fresh"))))
	wantRefused(t, "new JWT of the withdrawn key", err, ErrInvalid, ReasonKey)
	_, err = e.v.Verify(t.Context(), bearer(cached))
	wantRefused(t, "cached JWT of the withdrawn key", err, ErrInvalid, ReasonKey)
	// Without any unknown kid, Run's refresh fetches the set again when it
	// is KeySetRefresh old: the same holds then.
	e2 := newJWTEnv(t, testAudience)
	old2 := e2.idp.Keypair
	cached2 := sign(t, old2, e2.claims("cached"))
	if _, err := e2.v.Verify(t.Context(), bearer(cached2)); err != nil {
		t.Fatal(err)
	}
	e2.idp.publish(randomKey(t))
	e2.clock.Advance(KeySetRefresh)
	for _, is := range e2.v.issuers {
		is.refresh(t.Context(), KeySetRefresh)
	}
	_, err = e2.v.Verify(t.Context(), bearer(cached2))
	wantRefused(t, "cached JWT after a refresh without its key", err, ErrInvalid, ReasonKey)
}

// A provider that cannot be reached, or answers with too much, makes its
// JWTs ErrUnavailable, never a pass; a key set is tried again after
// KeySetRetry.
func TestJWTKeySetUnavailable(t *testing.T) {
	e := newJWTEnv(t, testAudience)
	raw := sign(t, e.idp.Keypair, e.claims("s"))
	e.idp.mu.Lock()
	e.idp.jwksBody = []byte(`{"keys":[` + strings.Repeat(" ", idpclient.MaxAnswer) + `]}`)
	e.idp.mu.Unlock()
	_, err := e.v.Verify(t.Context(), bearer(raw))
	wantRefused(t, "key set over 1 MiB", err, ErrUnavailable, ReasonKeySet)
	e.idp.mu.Lock()
	e.idp.jwksBody = nil
	e.idp.mu.Unlock()
	_, err = e.v.Verify(t.Context(), bearer(raw))
	wantRefused(t, "within KeySetRetry of the failure", err, ErrUnavailable, ReasonKeySet)
	e.clock.Advance(KeySetRetry)
	if _, err := e.v.Verify(t.Context(), bearer(raw)); err != nil {
		t.Fatalf("after KeySetRetry: %v", err)
	}
	if n := e.idp.jwksHits.Load(); n != 2 {
		t.Fatalf("%d key set fetches, want 2", n)
	}
}

// Issuers and the audience are checked when the Verifier is made.
func TestNewRefusesBadJWTConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Issuers: []string{"https://idp.example.com"}},
		{Issuers: []string{"ftp://idp.example.com"}, Audience: "a"},
		{Issuers: []string{"https://idp.example.com?x=1"}, Audience: "a"},
		{Issuers: []string{"https://user@idp.example.com"}, Audience: "a"},
		{Issuers: []string{"idp.example.com"}, Audience: "a"},
		{Issuers: []string{"https://idp.example.com", "https://idp.example.com"}, Audience: "a"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
}
