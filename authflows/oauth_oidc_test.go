package authflows

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oauth2-proxy/mockoidc"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/authflows/provider"
)

// testIdP is a real OpenID Provider (github.com/oauth2-proxy/mockoidc) run
// in the test process over real HTTP, wrapped so that a test can see the
// authorization requests, rotate the signing key, sign with a key it does
// not publish, and tamper with the nonce.
type testIdP struct {
	*mockoidc.MockOIDC
	mu        sync.RWMutex // held for reading by every request, for writing by key changes
	published *mockoidc.Keypair
	authorize []url.Values
	jwksHits  atomic.Int32
	swapNonce atomic.Bool
	tokens    idTokenRewriter // replaces the next ID token, when set
	// refuseRefresh answers every refresh_token grant with invalid_grant.
	refuseRefresh atomic.Bool
	// endSession, when set before Gatehouse starts, is added to the
	// discovery document as end_session_endpoint (mockoidc has none).
	endSession string
}

func newTestIdP(t *testing.T, clockNow time.Time) *testIdP {
	t.Helper()
	idp := &testIdP{}
	oauthtest.RunOIDC(t, func(m *mockoidc.MockOIDC) {
		idp.MockOIDC, idp.published = m, m.Keypair
		// mockoidc's clock is the wall clock; Gatehouse's is the test's fake.
		m.FastForward(time.Until(clockNow))
		_ = m.AddMiddleware(idp.middleware)
	})
	return idp
}

// middleware lets the test see and bend the provider's endpoints.
func (idp *testIdP) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		idp.mu.RLock()
		defer idp.mu.RUnlock()
		switch r.URL.Path {
		case mockoidc.DiscoveryEndpoint:
			if idp.endSession != "" {
				rec := &bufferedWriter{header: http.Header{}}
				next.ServeHTTP(rec, r)
				var doc map[string]any
				_ = json.Unmarshal(rec.body.Bytes(), &doc)
				doc["end_session_endpoint"] = idp.endSession
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(doc)
				return
			}
		case mockoidc.JWKSEndpoint:
			idp.jwksHits.Add(1)
			b, _ := idp.published.JWKS()
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(b)
			return
		case mockoidc.TokenEndpoint:
			if idp.refuseRefresh.Load() && r.FormValue("grant_type") == "refresh_token" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
				return
			}
			idp.tokens.middleware(next).ServeHTTP(w, r)
			return
		case mockoidc.AuthorizationEndpoint:
			q := r.URL.Query()
			idp.authorize = append(idp.authorize, q)
			if idp.swapNonce.Swap(false) {
				q.Set("nonce", "nonce-of-another-flow")
				r.URL.RawQuery = q.Encode()
			}
		}
		next.ServeHTTP(w, r)
	})
}

// rotate makes a new key the signing key and publishes only it.
func (idp *testIdP) rotate(t *testing.T) {
	k, err := mockoidc.RandomKeypair(2048)
	if err != nil {
		t.Fatal(err)
	}
	idp.mu.Lock()
	defer idp.mu.Unlock()
	idp.Keypair, idp.published = k, k
}

// signWithForeignKey signs from now on with a key that is not published,
// under the published key's kid; restore undoes it.
func (idp *testIdP) signWithForeignKey(t *testing.T) (restore func()) {
	k, err := mockoidc.RandomKeypair(2048)
	if err != nil {
		t.Fatal(err)
	}
	idp.mu.Lock()
	defer idp.mu.Unlock()
	k.Kid, _ = idp.published.KeyID()
	old := idp.Keypair
	idp.Keypair = k
	return func() {
		idp.mu.Lock()
		defer idp.mu.Unlock()
		idp.Keypair = old
	}
}

func (idp *testIdP) authorizeRequests() []url.Values {
	idp.mu.RLock()
	defer idp.mu.RUnlock()
	return slices.Clone(idp.authorize)
}

// config is Gatehouse's configuration of the IdP as provider oidc.
func (idp *testIdP) config(groupsClaim string) func(base string) provider.Config {
	return func(base string) provider.Config {
		return provider.Config{
			Name: "oidc", Issuer: idp.Issuer(), ClientID: idp.ClientID, ClientSecret: idp.ClientSecret,
			RedirectURL: base + "/auth/callback/oidc", Title: "Acme SSO", GroupsClaim: groupsClaim,
			DiscoveryWait: time.Second,
		}
	}
}

func newOIDCEnv(t *testing.T, groupsClaim string) (*oauthEnv, *testIdP) {
	t.Helper()
	idp := newTestIdP(t, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	e := newOAuthEnv(t, oauthEnvOptions{providers: []string{}, oidc: idp.config(groupsClaim)})
	return e, idp
}

// The generic provider, configured by discovery from the issuer URL, signs
// a user in: the authorization request carries PKCE S256, a nonce, a state
// and the scopes; the identity is keyed by iss and sub; the groups claim
// becomes oidc:GROUP; the sign-in page shows the configured title.
func TestOIDCSignIn(t *testing.T) {
	e, idp := newOIDCEnv(t, "groups")
	idp.QueueUser(oauthtest.ClaimsUser{Sub: "kc-1", Extra: map[string]any{"email": "Kim@Example.com", "email_verified": true, "groups": []string{"ops", "eng", "bad,group", "eng"}}})
	b := e.newBrowser()
	if body := b.get("/auth/login").body; !strings.Contains(body, `href="/auth/login/oidc`) || !strings.Contains(body, "Acme SSO") {
		t.Errorf("sign-in page has no Acme SSO button:\n%s", body)
	}
	a := b.flow("/auth/login/oidc?rd=/app")
	if a.status != http.StatusSeeOther || a.location() != "/app" {
		t.Fatalf("callback: %d %s", a.status, a.body)
	}
	me, ok := b.me()
	if !ok || me.Email != "kim@example.com" {
		t.Fatalf("me = %+v, %v", me, ok)
	}
	reqs := idp.authorizeRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d authorization requests", len(reqs))
	}
	q := reqs[0]
	if q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 {
		t.Errorf("no PKCE S256: %v", q)
	}
	if len(q.Get("nonce")) < 22 || len(q.Get("state")) < 22 {
		t.Errorf("nonce %q, state %q: want 128 bits or more", q.Get("nonce"), q.Get("state"))
	}
	if q.Get("scope") != "openid email profile" || q.Get("redirect_uri") != e.base+"/auth/callback/oidc" {
		t.Errorf("scope %q redirect_uri %q", q.Get("scope"), q.Get("redirect_uri"))
	}
	users, _ := e.Store.ListUsers(t.Context())
	if len(users) != 1 {
		t.Fatalf("users: %+v", users)
	}
	ids := e.identities(users[0].ID)
	if len(ids) != 1 || ids[0].Provider != "oidc" || ids[0].Subject != idp.Issuer()+"#kc-1" {
		t.Errorf("identities = %+v, want oidc keyed by iss#sub", ids)
	}
	login := e.Logs.Events("oauth_login")
	if len(login) != 1 || !strings.Contains(login[0], "groups=oidc:eng,oidc:ops") {
		t.Errorf("login event %q, want groups=oidc:eng,oidc:ops (the entry with a comma dropped)", login)
	}
}

// --oidc-groups-claim names another claim; a single string counts as one group.
func TestOIDCGroupsClaimName(t *testing.T) {
	e, idp := newOIDCEnv(t, "roles")
	idp.QueueUser(oauthtest.ClaimsUser{Sub: "r-1", Extra: map[string]any{"email": "r@example.com", "email_verified": true, "roles": "admin", "groups": []string{"ignored"}}})
	if a := e.newBrowser().flow("/auth/login/oidc"); a.status != http.StatusSeeOther {
		t.Fatalf("%d %s", a.status, a.body)
	}
	if login := e.Logs.Events("oauth_login"); len(login) != 1 || !strings.HasSuffix(login[0], "groups=oidc:admin") {
		t.Errorf("login event %q, want groups=oidc:admin only", login)
	}
}

// email_verified false or missing: the email is not used, so no account is
// created from it (OA6).
func TestOIDCUnverifiedEmail(t *testing.T) {
	for name, claims := range map[string]map[string]any{
		"false":         {"email": "u@example.com", "email_verified": false},
		"missing":       {"email": "u@example.com"},
		"string false":  {"email": "u@example.com", "email_verified": "false"},
		"not a boolean": {"email": "u@example.com", "email_verified": 1},
	} {
		t.Run(name, func(t *testing.T) {
			e, idp := newOIDCEnv(t, "groups")
			idp.QueueUser(oauthtest.ClaimsUser{Sub: "u-1", Extra: claims})
			a := e.newBrowser().flow("/auth/login/oidc")
			if a.status != http.StatusForbidden || a.problemCode() != "email_not_verified" {
				t.Errorf("%d %s, want 403 email_not_verified", a.status, a.body)
			}
			if users, _ := e.Store.ListUsers(t.Context()); len(users) != 0 {
				t.Errorf("users created: %+v", users)
			}
		})
	}
}

// ID1: a token signed by a key the IdP does not publish is refused; after
// the IdP rotates its keys mid-test, the new key set is fetched and sign-in
// works again.
func TestOIDCForeignKeyAndRotation(t *testing.T) {
	e, idp := newOIDCEnv(t, "groups")
	user := &mockoidc.MockUser{Subject: "rot-1", Email: "rot@example.com", EmailVerified: true}
	idp.QueueUser(user)
	if a := e.newBrowser().flow("/auth/login/oidc"); a.status != http.StatusSeeOther {
		t.Fatalf("first sign-in: %d %s", a.status, a.body)
	}
	restore := idp.signWithForeignKey(t)
	idp.QueueUser(user)
	b := e.newBrowser()
	if a := b.flow("/auth/login/oidc"); a.status != http.StatusBadRequest || a.problemCode() != "invalid_id_token" {
		t.Errorf("foreign key: %d %s, want 400 invalid_id_token", a.status, a.body)
	}
	if _, ok := b.me(); ok {
		t.Error("signed in with a foreign key's token")
	}
	restore()
	hits := idp.jwksHits.Load()
	idp.rotate(t)
	idp.QueueUser(user)
	if a := e.newBrowser().flow("/auth/login/oidc"); a.status != http.StatusSeeOther {
		t.Fatalf("after rotation: %d %s", a.status, a.body)
	}
	if idp.jwksHits.Load() <= hits {
		t.Error("the key set was not fetched again for the new kid")
	}
}

// The nonce of the ID token must be this flow's; the state must be known,
// single use and from this browser.
func TestOIDCNonceAndState(t *testing.T) {
	e, idp := newOIDCEnv(t, "groups")
	user := &mockoidc.MockUser{Subject: "n-1", Email: "n@example.com", EmailVerified: true}
	idp.QueueUser(user)
	idp.swapNonce.Store(true)
	if a := e.newBrowser().flow("/auth/login/oidc"); a.status != http.StatusBadRequest || a.problemCode() != "invalid_id_token" {
		t.Errorf("other nonce: %d %s, want 400 invalid_id_token", a.status, a.body)
	}
	idp.QueueUser(user)
	b := e.newBrowser()
	callback := b.authorize("/auth/login/oidc")
	held := b.heldTransactionCookie()
	if a := b.get(strings.Replace(callback, "state=", "state=x", 1)); a.status != http.StatusBadRequest || a.problemCode() != "invalid_state" {
		t.Errorf("altered state: %d %s", a.status, a.body)
	}
	b.holdTransactionCookie(held)
	if a := b.get(callback); a.status != http.StatusSeeOther {
		t.Fatalf("callback: %d %s", a.status, a.body)
	}
	b.holdTransactionCookie(held)
	if a := b.get(callback); a.status != http.StatusBadRequest || a.problemCode() != "invalid_state" {
		t.Errorf("replayed state: %d %s", a.status, a.body)
	}
}

// A signed-in user links the OIDC account, which then signs them in, and
// unlinks it again.
func TestOIDCLinkAndUnlink(t *testing.T) {
	e, idp := newOIDCEnv(t, "groups")
	u := e.newUser("pat@example.com", true)
	b := e.newBrowser()
	b.signIn(u)
	user := &mockoidc.MockUser{Subject: "pat-sso", Email: "pat@corp.example", EmailVerified: true}
	idp.QueueUser(user)
	if a := b.flow("/auth/link/oidc"); a.status != http.StatusSeeOther {
		t.Fatalf("link: %d %s", a.status, a.body)
	}
	ids := e.identities(u.ID)
	if len(ids) != 1 || ids[0].Provider != "oidc" || ids[0].Subject != idp.Issuer()+"#pat-sso" {
		t.Fatalf("identities after link: %+v", ids)
	}
	idp.QueueUser(user)
	other := e.newBrowser()
	if a := other.flow("/auth/login/oidc"); a.status != http.StatusSeeOther {
		t.Fatalf("sign-in by the linked account: %d %s", a.status, a.body)
	}
	if me, _ := other.me(); me.Email != "pat@example.com" {
		t.Errorf("signed in as %q, want the linked user", me.Email)
	}
	if a := b.do(http.MethodDelete, "/auth/link/oidc"); a.status != http.StatusNoContent {
		t.Fatalf("unlink: %d %s", a.status, a.body)
	}
	if ids := e.identities(u.ID); len(ids) != 0 {
		t.Errorf("identities after unlink: %+v", ids)
	}
}
