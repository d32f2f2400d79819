package provider

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// ID1: a discovery document that sends the code, the client secret or the
// key fetch over http:// to a host off the loopback is refused at start,
// naming --oidc-issuer-url; so is a discovery that redirects elsewhere.
func TestOIDCDiscoveredEndpointsOverHTTPRefused(t *testing.T) {
	for _, field := range []string{"authorization_endpoint", "token_endpoint", "jwks_uri"} {
		var srv *httptest.Server
		srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			doc := map[string]any{
				"issuer": srv.URL, "authorization_endpoint": srv.URL + "/auth", "token_endpoint": srv.URL + "/token",
				"jwks_uri": srv.URL + "/keys", "id_token_signing_alg_values_supported": []string{"RS256"},
			}
			doc[field] = "http://idp.example/" + field
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(doc)
		}))
		cfg := Config{Name: "oidc", Issuer: srv.URL, ClientID: "c", ClientSecret: "s", RedirectURL: "http://x/auth/callback/oidc", DiscoveryWait: time.Second}
		_, err := New(t.Context(), []Config{cfg}, time.Now)
		if err == nil || !strings.HasPrefix(err.Error(), "invalid --oidc-issuer-url: ") || !strings.Contains(err.Error(), "http://") {
			t.Errorf("%s over http off loopback: err = %v, want a refusal naming --oidc-issuer-url", field, err)
		}
		srv.Close()
	}
}

// Start-up: discovery is retried while the IdP is not up yet; an issuer
// that never answers, or whose document names another issuer, stops the
// start with one line naming --oidc-issuer-url.
func TestOIDCDiscoveryAtStart(t *testing.T) {
	cfg := func(issuer string) Config {
		return Config{Name: "oidc", Issuer: issuer, ClientID: "c", ClientSecret: "s", RedirectURL: "http://x/auth/callback/oidc", DiscoveryWait: 3 * time.Second}
	}
	// Late IdP: 503 for the first two discovery requests.
	var calls atomic.Int32
	var late *httptest.Server
	late = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": late.URL, "authorization_endpoint": late.URL + "/auth", "token_endpoint": late.URL + "/token",
			"jwks_uri": late.URL + "/keys", "id_token_signing_alg_values_supported": []string{"RS256"},
		})
	}))
	defer late.Close()
	m, err := New(t.Context(), []Config{cfg(late.URL)}, time.Now)
	if err != nil || m["oidc"].oauth.Endpoint.AuthURL != late.URL+"/auth" {
		t.Fatalf("late IdP: %v", err)
	}
	if calls.Load() != 3 {
		t.Errorf("%d discovery requests, want 3 (two retries)", calls.Load())
	}

	mismatch := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"issuer":"https://other.example","authorization_endpoint":"https://other.example/a","token_endpoint":"https://other.example/t","jwks_uri":"https://other.example/k"}`))
	}))
	defer mismatch.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	for name, issuer := range map[string]string{"other issuer": mismatch.URL, "unreachable": down.URL, "http off loopback": "http://idp.example"} {
		_, err := New(t.Context(), []Config{cfg(issuer)}, time.Now)
		if err == nil || !strings.HasPrefix(err.Error(), "invalid --oidc-issuer-url: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err = %v, want one line naming --oidc-issuer-url", name, err)
		}
	}
}
