package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/oauth2-proxy/mockoidc"
)

// discoveryServer serves an OpenID discovery document naming issuer.
func discoveryServer(t *testing.T, issuer func(self string) string) *httptest.Server {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/openid-configuration" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": issuer(srv.URL), "authorization_endpoint": srv.URL + "/auth", "token_endpoint": srv.URL + "/token",
			"jwks_uri": srv.URL + "/keys", "id_token_signing_alg_values_supported": []string{"RS256"},
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// An issuer whose discovery document names another issuer stops the start
// with one line naming --oidc-issuer-url, before any port is opened.
func TestOIDCIssuerMismatchStopsStart(t *testing.T) {
	idp := discoveryServer(t, func(string) string { return "https://someone-else.example" })
	up, _ := echoUpstream(t)
	held := listenLoopback(t)
	defer held.Close()
	var out, errOut bytes.Buffer
	code := run([]string{"--upstream", up.URL, "--db", filepath.Join(t.TempDir(), "g.db"), "--listen", held.Addr().String(),
		"--oidc-issuer-url", idp.URL, "--oidc-client-id", "id", "--oidc-client-secret", "s"},
		strings.NewReader(""), &out, &errOut, envOf(nil))
	msg := strings.TrimSpace(errOut.String())
	if code == 0 || !strings.Contains(msg, "--oidc-issuer-url") || strings.Contains(msg, "\n") {
		t.Errorf("exit %d, stderr %q: want one line naming --oidc-issuer-url", code, msg)
	}
	if strings.Contains(msg, "address already in use") {
		t.Errorf("tried to listen: %q", msg)
	}
}

// With a reachable issuer, the oidc provider is on: its button is on the
// sign-in page and /auth/login/oidc sends the browser to the discovered
// authorization endpoint with PKCE and a nonce.
func TestOIDCFromFlags(t *testing.T) {
	idp := discoveryServer(t, func(self string) string { return self })
	up, _ := echoUpstream(t)
	g := startGatehouse(t, filepath.Join(t.TempDir(), "g.db"), "--upstream", up.URL,
		"--oidc-issuer-url", idp.URL, "--oidc-client-id", "gh-oidc", "--oidc-client-secret", "s", "--oidc-title", "Acme Keycloak")
	c := newClient()
	if _, body := get(t, c, g.URL+"/auth/login"); !strings.Contains(body, "Acme Keycloak") {
		t.Errorf("sign-in page lacks the oidc button:\n%s", body)
	}
	resp, err := c.Get(g.URL + "/auth/login/oidc")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, idp.URL+"/auth?") ||
		!strings.Contains(loc, "code_challenge_method=S256") || !strings.Contains(loc, "nonce=") ||
		!strings.Contains(loc, "scope=openid+email+profile") {
		t.Errorf("%d Location %q", resp.StatusCode, loc)
	}
}

// recorder keeps what an http.Handler wrote, to read the IdP's token answers.
type recorder struct {
	http.ResponseWriter
	body bytes.Buffer
}

func (r *recorder) Write(b []byte) (int, error) {
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

// The binary's wiring against a real OpenID Provider (mockoidc) over real
// HTTP: sign in through --oidc-issuer-url, reach the upstream as that user,
// and never log the code, the ID token or the access token (LG1).
func TestOIDCEndToEnd(t *testing.T) {
	var mu sync.Mutex
	var secrets []string
	idp := oauthtest.RunOIDC(t, func(idp *mockoidc.MockOIDC) {
		_ = idp.AddMiddleware(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != mockoidc.TokenEndpoint {
					next.ServeHTTP(w, r)
					return
				}
				rec := &recorder{ResponseWriter: w}
				next.ServeHTTP(rec, r)
				var tok map[string]any
				_ = json.Unmarshal(rec.body.Bytes(), &tok)
				mu.Lock()
				defer mu.Unlock()
				for _, k := range []string{"access_token", "id_token", "refresh_token"} {
					if s, ok := tok[k].(string); ok && s != "" {
						secrets = append(secrets, s)
					}
				}
				secrets = append(secrets, r.PostFormValue("code"))
			})
		})
	})
	idp.QueueUser(&mockoidc.MockUser{Subject: "e2e-1", Email: "sso@example.com", EmailVerified: true})

	up, _ := echoUpstream(t)
	g := startGatehouse(t, filepath.Join(t.TempDir(), "g.db"), "--upstream", up.URL,
		"--oidc-issuer-url", idp.Issuer(), "--oidc-client-id", idp.ClientID, "--oidc-client-secret", idp.ClientSecret,
		"--open-signup")
	c := newClient()
	next := g.URL + "/auth/login/oidc?rd=/hello"
	for range 3 { // Gatehouse → IdP → callback
		resp, err := c.Get(next)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 3 {
			t.Fatalf("GET %s: %d", next, resp.StatusCode)
		}
		next = resp.Header.Get("Location")
		if strings.HasPrefix(next, "/") {
			next = g.URL + next
		}
	}
	if next != g.URL+"/hello" {
		t.Errorf("after the callback: %q, want the rd", next)
	}
	status, body := get(t, c, g.URL+"/auth/me")
	if status != http.StatusOK || !strings.Contains(body, "sso@example.com") {
		t.Fatalf("/auth/me: %d %s", status, body)
	}
	if status, _ := get(t, c, g.URL+"/hello"); status != http.StatusOK {
		t.Errorf("upstream through the session: %d", status)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(secrets) < 3 {
		t.Fatalf("recorded %d IdP secrets", len(secrets))
	}
	logs := g.Logs.String()
	for _, s := range secrets {
		if s != "" && strings.Contains(logs, s) {
			t.Errorf("a code or token of the IdP is in the logs")
		}
	}
}
