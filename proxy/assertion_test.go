package proxy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/gatehouse-auth/gatehouse/proxy/assertion"
	"github.com/gatehouse-auth/gatehouse/proxy/session"
	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
)

// assertionEnv is env with identity assertions on, the gate dropping the
// token of a session it finds gone, and the JWKS served over HTTP.
func assertionEnv(t *testing.T, configure ...func(*Config)) (*env, *assertion.Issuer, string) {
	t.Helper()
	keyStore, err := bolt.Open(filepath.Join(t.TempDir(), "keys.db"), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = keyStore.Close() })
	var issuer *assertion.Issuer
	var jwksURL string
	e := newEnv(t, func(c *Config) {
		keys, err := assertion.NewKeys(t.Context(), keyStore, c.Clock, c.Logger)
		if err != nil {
			t.Fatal(err)
		}
		jwks := httptest.NewServer(keys)
		t.Cleanup(jwks.Close)
		issuer, err = assertion.New(assertion.Config{Keys: keys, Issuer: baseURL.String(), Audience: baseURL.String(), Clock: c.Clock})
		if err != nil {
			t.Fatal(err)
		}
		c.Assertions = issuer
		c.Gate = &session.Gate{Sessions: c.Sessions, CookieName: DefaultCookieName, IdleTTL: c.IdleTTL, LastSeen: c.LastSeen, Clock: c.Clock, Gone: issuer.Drop}
		jwksURL = jwks.URL
		for _, f := range configure {
			f(c)
		}
	})
	return e, issuer, jwksURL
}

// verifyAssertion checks the token as an app would: JWKS over HTTP, ES256
// signature by kid, iss, aud and exp.
func verifyAssertion(t *testing.T, jwksURL, token string) map[string]any {
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
		t.Fatalf("parse assertion: %v", err)
	}
	keys := set.Key(parsed.Headers[0].KeyID)
	if len(keys) != 1 {
		t.Fatalf("kid %q not in the JWKS", parsed.Headers[0].KeyID)
	}
	var std jwt.Claims
	var all map[string]any
	if err := parsed.Claims(keys[0].Key, &std, &all); err != nil {
		t.Fatalf("signature: %v", err)
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: baseURL.String(), AnyAudience: jwt.Audience{baseURL.String()}, Time: epoch}, 0); err != nil {
		t.Fatalf("claims: %v", err)
	}
	return all
}

func TestAssertionForwarded(t *testing.T) {
	e, _, jwksURL := assertionEnv(t)
	id := e.signIn(sessionID)
	e.serve(withCookie(get("/app"), id))
	got := e.upstream.last(t).Header.Values(AssertionHeader)
	if len(got) != 1 {
		t.Fatalf("upstream got %d assertion headers", len(got))
	}
	claims := verifyAssertion(t, jwksURL, got[0])
	if claims["sub"] != userID || claims["email"] != userEmail {
		t.Fatalf("claims %v", claims)
	}
	// The next request reuses the cached token: no new signature.
	e.serve(withCookie(get("/app"), id))
	if again := e.upstream.last(t).Header.Get(AssertionHeader); again != got[0] {
		t.Fatal("token re-minted on the next request")
	}
}

// A forged client-sent assertion never reaches the upstream, whatever its
// spelling, signed in or not, on public paths too.
func TestForgedAssertionStripped(t *testing.T) {
	e, _, _ := assertionEnv(t)
	id := e.signIn(sessionID)
	const forged = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9."
	for _, name := range []string{"X-Gatehouse-Jwt-Assertion", "x-gatehouse-jwt-assertion", "X_Gatehouse_Jwt_Assertion", "X-GATEHOUSE-JWT_ASSERTION"} {
		for _, tc := range []struct {
			path     string
			signedIn bool
		}{{"/app", true}, {"/static/x", false}, {"/static/x", true}} {
			r := get(tc.path)
			r.Header[name] = []string{forged}
			if tc.signedIn {
				withCookie(r, id)
			}
			e.serve(r)
			for k, v := range e.upstream.last(t).Header {
				if headerEqual(k, "x-gatehouse-jwt-assertion") && (len(v) != 1 || v[0] == forged || !tc.signedIn) {
					t.Fatalf("%s on %s (signed in %v): upstream got %s: %q", name, tc.path, tc.signedIn, k, v)
				}
			}
		}
	}
}

// A revoked session's cached token is gone on its next request.
func TestRevokedSessionTokenDropped(t *testing.T) {
	e, issuer, _ := assertionEnv(t)
	id := e.signIn(sessionID)
	e.serve(withCookie(get("/app"), id))
	h := storage.HashSecret(id)
	if !issuer.Cached(h) {
		t.Fatal("no token cached after a forwarded request")
	}
	e.store.remove(id)
	if res := e.serve(withCookie(get("/app"), id)); res.StatusCode != http.StatusFound {
		t.Fatalf("revoked session: status %d", res.StatusCode)
	}
	if issuer.Cached(h) {
		t.Fatal("revoked session's token still cached")
	}
}
