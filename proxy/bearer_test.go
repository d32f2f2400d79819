package proxy

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/bearer"
	"github.com/gatehouse-auth/gatehouse/proxy/policy"
	"github.com/gatehouse-auth/gatehouse/proxy/route"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// tokenStore is an in-memory bearer.TokenStore.
type tokenStore struct {
	mu     sync.Mutex
	tokens map[storage.Hash]storage.APIToken
	owners map[string]storage.APITokenOwner
	err    error
}

func (s *tokenStore) APITokenByHash(_ context.Context, h storage.Hash) (storage.APIToken, storage.APITokenOwner, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return storage.APIToken{}, storage.APITokenOwner{}, s.err
	}
	t, ok := s.tokens[h]
	if !ok {
		return t, storage.APITokenOwner{}, storage.ErrNotFound
	}
	return t, s.owners[t.UserID], nil
}

func (s *tokenStore) TouchAPITokens(context.Context, map[storage.Hash]time.Time) error { return nil }

// add stores t and returns the token that presents it.
func (s *tokenStore) add(t storage.APIToken) string {
	token, h := storage.NewAPIToken()
	t.Hash, t.ID = h, storage.NewAPITokenID()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[h] = t
	return token
}

func (s *tokenStore) remove(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tokens, storage.HashSecret(token))
}

// tokenRules: /api/ takes tokens, /api/ops/ only for the group oidc:ops,
// /api/mfa/ needs a second factor; /app/ does not take tokens.
var tokenRules = []route.Rule{
	{Path: "/api/ops/", Tokens: true, Groups: []string{"oidc:ops"}},
	{Path: "/api/mfa/", Tokens: true, SecondFactor: true},
	{Path: "/api/", Tokens: true},
}

// withBearer gives the proxy a bearer verifier over tokens (ada's user
// token and the service "deploy" of group oidc:ops are in it) and a
// throttle of burst per minute.
func withBearer(t *testing.T, tokens *tokenStore, burst int) func(*Config) {
	return func(c *Config) {
		v, err := bearer.New(bearer.Config{Tokens: tokens, Clock: c.Clock, Logger: c.Logger})
		if err != nil {
			t.Fatal(err)
		}
		c.Bearer = v
		c.Throttle = &bearer.Throttle{Burst: burst, Clock: c.Clock}
		c.ForwardAuthTrusted = web.TrustedProxies{trustedPrefix}
	}
}

func newTokens() *tokenStore {
	return &tokenStore{
		tokens: map[storage.Hash]storage.APIToken{},
		owners: map[string]storage.APITokenOwner{userID: {Email: userEmail}},
	}
}

func withBearerToken(r *http.Request, token string) *http.Request {
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

// A user's token acts as the user, a service token as service:NAME with
// its groups and no email; the upstream gets neither the Authorization
// header nor the session cookie, and the assertion says amr ["token"],
// signed once per credential, not per request.
func TestBearerIdentity(t *testing.T) {
	tokens := newTokens()
	user := tokens.add(storage.APIToken{Name: "ci", UserID: userID})
	service := tokens.add(storage.APIToken{Name: "deploy", Service: "deploy", Groups: []string{"oidc:ops"}})
	e, issuer, jwksURL := assertionEnv(t, withRules(t, nil, tokenRules...), withBearer(t, tokens, 60))

	for range 3 {
		if res := e.serve(withCookie(withBearerToken(get("/api/x"), user), "not-a-session")); res.StatusCode != http.StatusOK {
			t.Fatalf("user token: %d", res.StatusCode)
		}
	}
	got := e.upstream.last(t)
	if got.Header.Get("X-Forwarded-User") != userID || got.Header.Get("X-Forwarded-Email") != userEmail {
		t.Errorf("user token: identity %q %q", got.Header.Get("X-Forwarded-User"), got.Header.Get("X-Forwarded-Email"))
	}
	if got.Header.Get("Authorization") != "" || strings.Contains(got.Header.Get("Cookie"), DefaultCookieName) {
		t.Errorf("upstream got Authorization %q, Cookie %q", got.Header.Get("Authorization"), got.Header.Get("Cookie"))
	}
	claims := verifyAssertion(t, jwksURL, got.Header.Get(AssertionHeader))
	if amr, _ := claims["amr"].([]any); len(amr) != 1 || amr[0] != "token" || claims["sub"] != userID {
		t.Errorf("assertion of a user token: amr %v, sub %v", claims["amr"], claims["sub"])
	}
	if n := issuer.Minted(); n != 1 {
		t.Errorf("%d assertions signed for three requests with one token, want 1", n)
	}

	if res := e.serve(withBearerToken(get("/api/ops/deploy"), service)); res.StatusCode != http.StatusOK {
		t.Fatalf("service token on its group's route: %d", res.StatusCode)
	}
	got = e.upstream.last(t)
	if got.Header.Get("X-Forwarded-User") != "service:deploy" || got.Header.Get("X-Forwarded-Email") != "" || got.Header.Get("X-Forwarded-Groups") != "oidc:ops" {
		t.Errorf("service token: %q %q %q", got.Header.Get("X-Forwarded-User"), got.Header.Get("X-Forwarded-Email"), got.Header.Get("X-Forwarded-Groups"))
	}
	if n := issuer.Minted(); n != 2 {
		t.Errorf("%d assertions signed, want 2 (one per credential)", n)
	}
	// The user lacks the route's group; no bearer proves a second factor.
	for path, want := range map[string]int{"/api/ops/x": http.StatusForbidden, "/api/mfa/x": http.StatusForbidden} {
		res := e.serve(withBearerToken(get(path, "Accept", "text/html"), user))
		if text := body(t, res); res.StatusCode != want || !strings.Contains(text, "access_denied") && !strings.Contains(text, "Not allowed") {
			t.Errorf("user token on %s: %d, want %d access_denied", path, res.StatusCode, want)
		}
	}
}

// Anywhere but a tokens: true route a bearer credential is ignored: the
// request is judged by its cookie (or as without one) and the
// Authorization header reaches the app unchanged; the verifier is not
// asked.
func TestBearerIgnoredOffTokenRoutes(t *testing.T) {
	tokens := newTokens()
	tokens.err = errors.New("must not be asked")
	e := newEnv(t, withRules(t, []string{"/static"}, tokenRules...), withBearer(t, tokens, 60))
	if res := e.serve(withBearerToken(get("/app", "Accept", "application/json"), "ghp_whatever")); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("bearer without a session off a tokens route: %d, want 401 (sign in)", res.StatusCode)
	}
	id := e.signIn(sessionID)
	if res := e.serve(withCookie(withBearerToken(get("/app"), "app-own-token"), id)); res.StatusCode != http.StatusOK {
		t.Fatalf("session with an app's bearer: %d", res.StatusCode)
	}
	got := e.upstream.last(t)
	if got.Header.Get("Authorization") != "Bearer app-own-token" || got.Header.Get("X-Forwarded-User") != userID {
		t.Errorf("upstream got Authorization %q as %q", got.Header.Get("Authorization"), got.Header.Get("X-Forwarded-User"))
	}
	if res := e.serve(withBearerToken(get("/static/x"), "x")); res.StatusCode != http.StatusOK || e.upstream.last(t).Header.Get("Authorization") != "Bearer x" {
		t.Errorf("public route with a bearer: %d", res.StatusCode)
	}
}

// On a tokens route a request without a bearer is judged by its cookie;
// one with a bad bearer gets 401 invalid_token with WWW-Authenticate,
// never a fall back to the cookie; the store failing is 503; and past the
// throttle's floor 429.
func TestBearerRefusals(t *testing.T) {
	tokens := newTokens()
	expired := tokens.add(storage.APIToken{UserID: userID, ExpiresAt: epoch.Add(-time.Second)})
	revoked := tokens.add(storage.APIToken{UserID: userID})
	tokens.remove(revoked)
	disabled := tokens.add(storage.APIToken{UserID: "u-disabled"})
	tokens.owners["u-disabled"] = storage.APITokenOwner{Email: "x@example.com", Disabled: true}
	e := newEnv(t, withRules(t, nil, tokenRules...), withBearer(t, tokens, 4))
	id := e.signIn(sessionID)

	if res := e.serve(withCookie(get("/api/x"), id)); res.StatusCode != http.StatusOK || e.upstream.last(t).Header.Get("X-Forwarded-User") != userID {
		t.Fatalf("session without a bearer on a tokens route: %d", res.StatusCode)
	}
	for name, token := range map[string]string{"expired": expired, "revoked": revoked, "disabled owner": disabled, "garbage": "not-a-token"} {
		res := e.serve(withCookie(withBearerToken(get("/api/x", "Accept", "application/json"), token), id))
		text := body(t, res)
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(text, `"invalid_token"`) || res.Header.Get("WWW-Authenticate") != `Bearer error="invalid_token"` {
			t.Errorf("%s token with a valid cookie: %d %q %q", name, res.StatusCode, res.Header.Get("WWW-Authenticate"), text)
		}
	}
	// Forward-auth applies the same (the check's client is its peer here:
	// another bucket).
	res := e.serve(withBearerToken(forwardAuth("/api/x", "Accept", "application/json"), expired))
	if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") != `Bearer error="invalid_token"` {
		t.Errorf("forward-auth, expired token: %d", res.StatusCode)
	}
	// Four bad credentials of this client spent the floor: the next is 429, even a good one.
	good := tokens.add(storage.APIToken{UserID: userID})
	for _, token := range []string{"bad", good} {
		if res := e.serve(withBearerToken(get("/api/x"), token)); res.StatusCode != http.StatusTooManyRequests {
			t.Errorf("past the floor: %d, want 429", res.StatusCode)
		}
	}
	e.clock.Advance(time.Minute)
	if res := e.serve(withBearerToken(get("/api/x"), good)); res.StatusCode != http.StatusOK {
		t.Errorf("a minute later, a good token: %d", res.StatusCode)
	}
	tokens.err = errors.New("store down")
	if res := e.serve(withBearerToken(get("/api/x"), good)); res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("store down: %d, want 503", res.StatusCode)
	}
	if e.upstream.count() != 2 {
		t.Errorf("upstream reached %d times, want 2", e.upstream.count())
	}
}

// The global policy applies to a user's token (its owner's email) and not
// to a service token, which only route groups judge.
func TestBearerPolicy(t *testing.T) {
	tokens := newTokens()
	user := tokens.add(storage.APIToken{UserID: userID}) // ada@example.com
	service := tokens.add(storage.APIToken{Service: "deploy", Groups: []string{"oidc:ops"}})
	e := newEnv(t, withPolicy(t, policy.Rules{EmailDomains: []string{"corp.com"}}), withRules(t, nil, tokenRules...), withBearer(t, tokens, 60))
	if res := e.serve(withBearerToken(get("/api/x"), user)); res.StatusCode != http.StatusForbidden {
		t.Errorf("user token of a refused address: %d, want 403", res.StatusCode)
	}
	if res := e.serve(withBearerToken(get("/api/x"), service)); res.StatusCode != http.StatusOK {
		t.Errorf("service token under the email policy: %d, want 200", res.StatusCode)
	}
	// Forward-auth: the same identity in the answer's headers.
	res := e.serve(withBearerToken(forwardAuth("/api/ops/x"), service))
	if res.StatusCode != http.StatusOK || res.Header.Get("X-Forwarded-User") != "service:deploy" || res.Header.Get("X-Forwarded-Groups") != "oidc:ops" {
		t.Errorf("forward-auth, service token: %d %q", res.StatusCode, res.Header.Get("X-Forwarded-User"))
	}
}
