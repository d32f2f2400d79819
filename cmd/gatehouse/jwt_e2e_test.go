package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
)

// A JWT of a configured identity provider (mockoidc, a real OpenID
// Provider over HTTP) is accepted through the running server on a tokens
// route as jwt:HOST:SUB with its verified email and groups, its signature
// checked once across many requests; the same JWT off a tokens route is
// ignored, one for another audience or signed by another key is refused,
// and the ID token the provider issues to the sign-in client is refused
// as a bearer.
func TestBearerJWTEndToEnd(t *testing.T) {
	// The key id is computed once, before the provider serves its key set
	// (mockoidc computes it lazily, unsynchronized).
	idp := oauthtest.RunOIDC(t, func(m *mockoidc.MockOIDC) { _, _ = m.Keypair.KeyID() })
	issuer, err := url.Parse(idp.Issuer())
	if err != nil {
		t.Fatal(err)
	}
	up, hits := echoUpstream(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "gatehouse.yaml")
	replaceFile(t, path, "routes:\n  - path: /api/admin/\n    tokens: true\n    groups: [oidc:admins]\n  - path: /api/\n    tokens: true\n")
	g := startGatehouse(t, filepath.Join(dir, "g.db"), "--upstream", up.URL, "--config", path, "--mode", "401",
		"--oidc-issuer-url", idp.Issuer(), "--oidc-client-id", idp.ClientID, "--oidc-client-secret", idp.ClientSecret,
		"--bearer-jwt-issuer", idp.Issuer(), "--bearer-jwt-audience", "api://orders")

	now := time.Now()
	claims := func(aud string) jwt.MapClaims {
		return jwt.MapClaims{"iss": idp.Issuer(), "sub": "svc-7", "aud": aud, "email": "robot@example.com", "email_verified": true,
			"groups": []string{"admins"}, "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(10 * time.Minute).Unix()}
	}
	token, err := idp.Keypair.SignJWT(claims("api://orders"))
	if err != nil {
		t.Fatal(err)
	}
	const requests = 20
	for i := range requests {
		code, h := bearerGet(t, g.URL+"/api/admin/x", token)
		if code != http.StatusOK || h.Get("X-Forwarded-User") != "jwt:"+issuer.Host+":svc-7" ||
			h.Get("X-Forwarded-Email") != "robot@example.com" || h.Get("X-Forwarded-Groups") != "oidc:admins" ||
			h.Get("Authorization") != "" || h.Get("X-Gatehouse-Jwt-Assertion") == "" {
			t.Fatalf("request %d with the JWT: %d %v", i, code, h)
		}
		if i == 0 {
			_, assertion := verifyWith(t, fetchJWKS(t, g.URL+"/auth/.well-known/jwks.json"), h.Get("X-Gatehouse-Jwt-Assertion"), g.URL, g.URL)
			if amr, _ := json.Marshal(assertion["amr"]); string(amr) != `["jwt"]` {
				t.Errorf("assertion amr %s, want [\"jwt\"]", amr)
			}
		}
	}
	if st := g.srv.verifier.Stats(); st.SignatureChecks != 1 || st.JWTCacheHits != requests-1 {
		t.Errorf("%d requests with one JWT: %d signature checks, %d cache hits; want 1 and %d", requests, st.SignatureChecks, st.JWTCacheHits, requests-1)
	}
	if code, _ := bearerGet(t, g.URL+"/app", token); code != http.StatusUnauthorized {
		t.Errorf("the JWT off a tokens route: %d, want 401 (judged as without it)", code)
	}

	refused := func(what, token string) {
		t.Helper()
		before := *hits
		r, _ := http.NewRequest(http.MethodGet, g.URL+"/api/x", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		res, err := newClient().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") != `Bearer error="invalid_token"` || *hits != before {
			t.Errorf("%s: %d %q, want 401 invalid_token", what, res.StatusCode, res.Header.Get("WWW-Authenticate"))
		}
	}
	other, err := idp.Keypair.SignJWT(claims("api://billing"))
	if err != nil {
		t.Fatal(err)
	}
	refused("a JWT for another audience", other)
	forger, err := mockoidc.RandomKeypair(2048)
	if err != nil {
		t.Fatal(err)
	}
	forger.Kid = idp.Keypair.Kid
	forged, err := forger.SignJWT(claims("api://orders"))
	if err != nil {
		t.Fatal(err)
	}
	refused("a JWT signed by another key under the provider's kid", forged)
	refused("the ID token of the sign-in client", signInIDToken(t, idp))
}

// signInIDToken runs the provider's authorization code flow for its
// client and returns the ID token it issues (aud: the client id).
func signInIDToken(t *testing.T, idp *mockoidc.MockOIDC) string {
	t.Helper()
	idp.QueueUser(&mockoidc.MockUser{Subject: "svc-7", Email: "robot@example.com", EmailVerified: true})
	q := url.Values{"client_id": {idp.ClientID}, "redirect_uri": {"http://127.0.0.1/callback"}, "response_type": {"code"},
		"scope": {"openid email"}, "state": {"s"}, "nonce": {"n"}}
	res, err := newClient().Get(idp.AuthorizationEndpoint() + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	loc, err := url.Parse(res.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("authorize: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	res, err = http.PostForm(idp.TokenEndpoint(), url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"redirect_uri": {"http://127.0.0.1/callback"}, "client_id": {idp.ClientID}, "client_secret": {idp.ClientSecret}})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var tr struct {
		IDToken string `json:"id_token"`
	}
	if err := json.NewDecoder(res.Body).Decode(&tr); err != nil || tr.IDToken == "" {
		t.Fatalf("token: %d %v", res.StatusCode, err)
	}
	return tr.IDToken
}
