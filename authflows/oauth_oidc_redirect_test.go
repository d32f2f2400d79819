package authflows

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oauth2-proxy/mockoidc"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/authflows/provider"
)

// ID1 wants every provider endpoint, discovered ones and the key set
// included, on https:// (http:// only on a loopback host), and
// CheckEndpointURL enforces that on the URLs of the discovery document. The
// provider's HTTP client (provider/client.go newProviderClient) must not
// follow a redirect off them either: a token endpoint that answers 307
// would get the client secret, the code and the PKCE verifier re-posted in
// clear to an http:// host off loopback, and a key set that answers 302
// would be fetched over plain http from there. (GitHub's API calls refuse a
// redirect to another origin too: provider/identity.go getJSON.)
//
// The plaintext host here is http://0.0.0.0:PORT: not a loopback host for
// CheckEndpointURL, and on Linux a connection to 0.0.0.0 reaches the test's
// listener on 127.0.0.1.
func TestOIDCProviderCallsFollowNoRedirectOffHTTPS(t *testing.T) {
	for _, target := range []string{"token endpoint", "key set"} {
		t.Run(target, func(t *testing.T) {
			var (
				mu   sync.Mutex
				seen []string // what reached the plaintext host
				idp  *mockoidc.MockOIDC
			)
			sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				seen = append(seen, r.Method+" "+r.URL.Path+" "+string(body))
				mu.Unlock()
				switch r.URL.Path {
				case "/keys":
					b, _ := idp.Keypair.JWKS()
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write(b)
				case "/token": // passes the request on to the real token endpoint
					req, _ := http.NewRequest(http.MethodPost, idp.TokenEndpoint(), strings.NewReader(string(body)))
					req.Header = r.Header.Clone()
					req.Header.Set("X-Review-Sink", "1")
					res, err := http.DefaultClient.Do(req)
					if err != nil {
						http.Error(w, err.Error(), http.StatusBadGateway)
						return
					}
					defer res.Body.Close()
					w.Header().Set("Content-Type", res.Header.Get("Content-Type"))
					w.WriteHeader(res.StatusCode)
					_, _ = io.Copy(w, res.Body)
				}
			}))
			defer sink.Close()
			plain := "http://0.0.0.0:" + sink.URL[strings.LastIndexByte(sink.URL, ':')+1:]
			if provider.CheckEndpointURL(plain) == nil {
				t.Fatalf("%s is accepted as an endpoint; the test needs one that is refused", plain)
			}
			idp = oauthtest.RunOIDC(t, func(m *mockoidc.MockOIDC) {
				m.FastForward(time.Until(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)))
				_ = m.AddMiddleware(func(next http.Handler) http.Handler {
					return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						switch {
						case target == "token endpoint" && r.URL.Path == mockoidc.TokenEndpoint && r.Header.Get("X-Review-Sink") == "":
							http.Redirect(w, r, plain+"/token", http.StatusTemporaryRedirect)
						case target == "key set" && r.URL.Path == mockoidc.JWKSEndpoint:
							http.Redirect(w, r, plain+"/keys", http.StatusFound)
						default:
							next.ServeHTTP(w, r)
						}
					})
				})
			})
			e := newOAuthEnv(t, oauthEnvOptions{providers: []string{}, oidc: func(base string) provider.Config {
				return provider.Config{Name: "oidc", Issuer: idp.Issuer(), ClientID: idp.ClientID, ClientSecret: idp.ClientSecret,
					RedirectURL: base + "/auth/callback/oidc", DiscoveryWait: time.Second}
			}})
			idp.QueueUser(&mockoidc.MockUser{Subject: "r-1", Email: "r@example.com", EmailVerified: true})
			a := e.newBrowser().flow("/auth/login/oidc")
			mu.Lock()
			defer mu.Unlock()
			if len(seen) > 0 {
				t.Errorf("the %s redirected to %s and Gatehouse followed in clear (sign-in answered %d): %q",
					target, plain, a.status, seen)
			}
			if a.status == http.StatusSeeOther {
				t.Errorf("sign-in completed through a plain-http %s off loopback", target)
			}
		})
	}
}
