package authflows

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
)

// idTokenRewriter makes the IdP's next token answer carry the ID token
// that forge makes of the real one (raw) and its claims.
type idTokenRewriter struct {
	mu    sync.Mutex
	forge func(raw string, claims jwt.MapClaims) string
}

func (rw *idTokenRewriter) next(f func(raw string, claims jwt.MapClaims) string) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.forge = f
}

func (rw *idTokenRewriter) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw.mu.Lock()
		forge := rw.forge
		rw.forge = nil
		rw.mu.Unlock()
		if r.URL.Path != mockoidc.TokenEndpoint || forge == nil {
			next.ServeHTTP(w, r)
			return
		}
		rec := &bufferedWriter{header: http.Header{}}
		next.ServeHTTP(rec, r)
		var tok map[string]any
		if err := json.Unmarshal(rec.body.Bytes(), &tok); err == nil {
			if raw, ok := tok["id_token"].(string); ok {
				claims := jwt.MapClaims{}
				if _, _, err := jwt.NewParser().ParseUnverified(raw, claims); err == nil {
					tok["id_token"] = forge(raw, claims)
				}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(tok)
	})
}

type bufferedWriter struct {
	header http.Header
	body   bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header         { return b.header }
func (b *bufferedWriter) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *bufferedWriter) WriteHeader(int)             {}

// ID1/OA2 against a real OpenID Provider: an ID token signed by the IdP's
// own key is still refused when its claims are not for this sign-in
// (another issuer, as in a mix-up with Google; another client; an azp of
// another client; the nonce of another flow; expired; no subject), and a
// token the IdP did not sign (alg none, HS256 keyed with the client
// secret) is refused. Nobody is signed in or created.
func TestOIDCTokenAttacks(t *testing.T) {
	e, idp := newOIDCEnv(t, "groups")
	rw := &idp.tokens
	now := e.Clock.Now()
	issuer := idp.Issuer()
	clientID := idp.ClientID
	for _, tc := range []struct {
		name   string
		claims map[string]any
		forge  func(string, jwt.MapClaims) string
	}{
		{name: "issuer of Google (mix-up)", claims: map[string]any{"iss": "https://accounts.google.com"}},
		{name: "issuer with a trailing slash", claims: map[string]any{"iss": issuer + "/"}},
		{name: "issuer in another case", claims: map[string]any{"iss": strings.ToUpper(issuer)}},
		{name: "another client", claims: map[string]any{"aud": "someone-else"}},
		{name: "audience list, no azp", claims: map[string]any{"aud": []string{"someone-else", clientID}}},
		{name: "audience list, azp of another client", claims: map[string]any{"aud": []string{clientID, "someone-else"}, "azp": "someone-else"}},
		{name: "azp of another client", claims: map[string]any{"azp": "someone-else"}},
		{name: "nonce of another flow", claims: map[string]any{"nonce": "replayed-nonce"}},
		{name: "no nonce", claims: map[string]any{"nonce": nil}},
		{name: "expired", claims: map[string]any{"exp": now.Add(-time.Minute).Unix()}},
		{name: "no subject", claims: map[string]any{"sub": ""}},
		{name: "alg none", forge: func(_ string, c jwt.MapClaims) string {
			s, _ := jwt.NewWithClaims(jwt.SigningMethodNone, c).SignedString(jwt.UnsafeAllowNoneSignatureType)
			return s
		}},
		{name: "alg none, empty signature dropped", forge: func(_ string, c jwt.MapClaims) string {
			s, _ := jwt.NewWithClaims(jwt.SigningMethodNone, c).SignedString(jwt.UnsafeAllowNoneSignatureType)
			return strings.TrimSuffix(s, ".")
		}},
		{name: "HS256 keyed with the client secret", forge: func(_ string, c jwt.MapClaims) string {
			s, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(idp.ClientSecret))
			return s
		}},
		{name: "payload swapped under the real signature", forge: swapPayload},
	} {
		claims := map[string]any{"email": "mallory@example.com", "email_verified": true, "groups": []string{"admins"}}
		for k, v := range tc.claims {
			claims[k] = v
		}
		idp.QueueUser(oauthtest.ClaimsUser{Sub: "attacker", Extra: claims})
		rw.next(tc.forge)
		a := e.newBrowser().flow("/auth/login/oidc")
		if a.status != http.StatusBadRequest || a.problemCode() != "invalid_id_token" {
			t.Errorf("%s: %d %s, want 400 invalid_id_token", tc.name, a.status, a.body)
		}
	}
	if users, _ := e.Store.ListUsers(t.Context()); len(users) != 0 {
		t.Errorf("accounts were created: %v", users)
	}
	// Control: the same account, its token passed through the rewriter
	// untouched, signs in.
	idp.QueueUser(oauthtest.ClaimsUser{Sub: "attacker", Extra: map[string]any{"email": "mallory@example.com", "email_verified": true}})
	rw.next(func(raw string, _ jwt.MapClaims) string { return raw })
	if a := e.newBrowser().flow("/auth/login/oidc"); a.status != http.StatusSeeOther {
		t.Errorf("control sign-in: %d %s", a.status, a.body)
	}
}

// swapPayload keeps the real header and signature over a payload whose
// email is another's.
func swapPayload(raw string, c jwt.MapClaims) string {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return raw
	}
	c["email"] = "admin@example.com"
	payload, _ := json.Marshal(c)
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]
}
