package authflows

import (
	"bytes"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oauth2-proxy/mockoidc"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/authflows/provider"
)

// What Gatehouse reads of a provider's answers is capped at 1 MiB
// (provider/identity.go maxProviderResponse; x/oauth2 caps the token
// response alike), the key set included, which go-oidc reads with
// io.ReadAll and no limit of its own (and so the discovery document at
// start): an IdP key set of 64 MiB (here: a real JWKS followed by 64 MiB of
// JSON whitespace) must not be read whole into memory at the callback.
func TestOIDCKeySetReadIsCapped(t *testing.T) {
	const padding = 64 << 20
	var written atomic.Int64
	idp := oauthtest.RunOIDC(t, func(m *mockoidc.MockOIDC) {
		m.FastForward(time.Until(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)))
		_ = m.AddMiddleware(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != mockoidc.JWKSEndpoint {
					next.ServeHTTP(w, r)
					return
				}
				b, _ := m.Keypair.JWKS()
				w.Header().Set("Content-Type", "application/json")
				n, _ := w.Write(b)
				written.Add(int64(n))
				chunk := bytes.Repeat([]byte(" "), 1<<20)
				for range padding >> 20 {
					n, err := w.Write(chunk)
					written.Add(int64(n))
					if err != nil {
						return
					}
				}
			})
		})
	})
	e := newOAuthEnv(t, oauthEnvOptions{providers: []string{}, oidc: func(base string) provider.Config {
		return provider.Config{Name: "oidc", Issuer: idp.Issuer(), ClientID: idp.ClientID, ClientSecret: idp.ClientSecret,
			RedirectURL: base + "/auth/callback/oidc", DiscoveryWait: time.Second}
	}})
	idp.QueueUser(&mockoidc.MockUser{Subject: "h-1", Email: "h@example.com", EmailVerified: true})
	a := e.newBrowser().flow("/auth/login/oidc")
	if got := written.Load(); got > 8<<20 {
		t.Errorf("Gatehouse read %d MiB of the IdP's key set (sign-in: %d); want the read cut off near maxProviderResponse (1 MiB)", got>>20, a.status)
	}
}
