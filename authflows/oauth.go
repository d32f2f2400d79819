package authflows

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/oauth2"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// ProviderConfig is one configured OAuth provider (seed: OAuthConfig). Empty
// endpoint fields take the provider's public defaults.
type ProviderConfig struct {
	Name         string // "google" or "github"
	ClientID     string
	ClientSecret string
	RedirectURL  string // must be {base-url}/auth/callback/{Name}
	AuthURL      string
	TokenURL     string
	UserinfoURL  string // google
	APIURL       string // github: base of GET /user and GET /user/emails
	// Issuer is the iss an ID token must carry (google). Empty: Google's,
	// "https://accounts.google.com" or "accounts.google.com". Tests point it
	// at their fake provider.
	Issuer string
}

// providerKind is what Gatehouse knows about a supported provider.
type providerKind struct {
	title    string
	scopes   []string // minimal (OA11)
	authURL  string
	tokenURL string
	infoURL  string // google userinfo, github API base
	issuers  []string
	oidc     bool // ID token with nonce (google)
}

// providerOrder lists the supported providers in the order pages show them.
var providerOrder = []string{"google", "github"}

// supportedProviders are the providers Gatehouse can talk to; the name is the
// path segment of /auth/login/{provider} and the key of linked identities.
var supportedProviders = map[string]providerKind{
	"google": {
		title:    "Google",
		scopes:   []string{"openid", "email", "profile"},
		authURL:  "https://accounts.google.com/o/oauth2/v2/auth",
		tokenURL: "https://oauth2.googleapis.com/token",
		infoURL:  "https://openidconnect.googleapis.com/v1/userinfo",
		issuers:  []string{"https://accounts.google.com", "accounts.google.com"},
		oidc:     true,
	},
	"github": {
		title:    "GitHub",
		scopes:   []string{"read:user", "user:email"},
		authURL:  "https://github.com/login/oauth/authorize",
		tokenURL: "https://github.com/login/oauth/access_token",
		infoURL:  "https://api.github.com",
	},
}

// providerTimeout bounds each call to a provider (token exchange, user API).
const providerTimeout = 10 * time.Second

// provider is a configured provider: its OAuth client and the endpoints of
// its identity. It never holds a user's token.
type provider struct {
	Name    string // as in the URL and in storage.Identity.Provider
	Title   string // for pages: "Google", "GitHub"
	kind    providerKind
	oauth   *oauth2.Config
	infoURL string
	issuers []string
	client  *http.Client
	// starts limits the flows a client IP may start with this provider, so
	// that unauthenticated requests cannot fill the store with pending
	// flows (DS1): at most flowStartBurst per flowStartPeriod.
	starts *keyedLimiter
}

// The per-IP limit on flow starts, per provider: the contract's floor, 60
// requests per client IP per minute, passes. A client IP can thus add a
// burst of 60 pending flows and then one a second; each expires after
// oauthFlowTTL and the sweep deletes it.
const (
	flowStartBurst  = 60
	flowStartPeriod = time.Minute
)

// newProviders builds the configured providers, their start limits on the
// clock now. An unsupported name, a provider listed twice, or one without
// client id, secret or redirect URL is an error (cmd/gatehouse reports the
// flags; this is the backstop).
func newProviders(cfgs []ProviderConfig, now func() time.Time) (map[string]*provider, error) {
	m := map[string]*provider{}
	for _, c := range cfgs {
		kind, ok := supportedProviders[c.Name]
		switch {
		case !ok:
			return nil, fmt.Errorf("authflows: unsupported OAuth provider %q", c.Name)
		case m[c.Name] != nil:
			return nil, fmt.Errorf("authflows: OAuth provider %q configured twice", c.Name)
		case c.ClientID == "" || c.ClientSecret == "" || c.RedirectURL == "":
			return nil, fmt.Errorf("authflows: OAuth provider %q needs a client id, a client secret and a redirect URL", c.Name)
		}
		p := &provider{
			Name:    c.Name,
			Title:   kind.title,
			kind:    kind,
			infoURL: or(c.UserinfoURL, kind.infoURL),
			issuers: kind.issuers,
			client:  &http.Client{Timeout: providerTimeout},
			starts:  newKeyedLimiter(flowStartBurst, flowStartPeriod, now),
			oauth: &oauth2.Config{
				ClientID:     c.ClientID,
				ClientSecret: c.ClientSecret,
				RedirectURL:  c.RedirectURL,
				Scopes:       kind.scopes,
				Endpoint: oauth2.Endpoint{
					AuthURL:  or(c.AuthURL, kind.authURL),
					TokenURL: or(c.TokenURL, kind.tokenURL),
					// Both providers take the client credentials in the
					// body; a fixed style avoids x/oauth2 retrying a
					// failed exchange with the other one.
					AuthStyle: oauth2.AuthStyleInParams,
				},
			},
		}
		if c.Name == "github" {
			p.infoURL = or(c.APIURL, kind.infoURL)
		}
		if c.Issuer != "" {
			p.issuers = []string{c.Issuer}
		}
		m[c.Name] = p
	}
	return m, nil
}

func or(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// providerLink is what pages need to show a provider button.
type providerLink struct {
	Name  string // path segment: /auth/login/{Name}
	Title string // "Google"
}

// providerLinks lists the configured providers in page order, for the
// sign-in page's buttons (.Providers with .Name and .Title).
func (h *Handler) providerLinks() []providerLink {
	var out []providerLink
	for _, name := range providerOrder {
		if p, ok := h.oauth[name]; ok {
			out = append(out, providerLink{Name: p.Name, Title: p.Title})
		}
	}
	return out
}

var (
	errUnknownProvider       = web.NewProblem(http.StatusNotFound, "unknown_provider", "Unknown sign-in provider")
	errProviderNotConfigured = web.NewProblem(http.StatusNotFound, "provider_not_configured", "This sign-in provider is not enabled")
)

// configuredProvider returns the provider named in the path, or answers 404:
// unknown_provider for a name Gatehouse does not support,
// provider_not_configured for a supported one without credentials.
func (h *Handler) configuredProvider(w http.ResponseWriter, r *http.Request) (*provider, bool) {
	name := r.PathValue("provider")
	if _, ok := supportedProviders[name]; !ok {
		web.WriteProblem(w, r, errUnknownProvider)
		return nil, false
	}
	p, ok := h.oauth[name]
	if !ok {
		web.WriteProblem(w, r, errProviderNotConfigured)
		return nil, false
	}
	return p, true
}

// providerTitle names a provider for pages and messages, also one that is
// no longer configured.
func providerTitle(name string) string {
	if k, ok := supportedProviders[name]; ok {
		return k.title
	}
	return name
}

// callContext is the context of calls to the provider: its HTTP client (with
// timeouts) for x/oauth2, and an overall deadline.
func (p *provider) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx = context.WithValue(ctx, oauth2.HTTPClient, p.client)
	return context.WithTimeout(ctx, 2*providerTimeout)
}

// errProviderCall marks a failed call to the provider (502 provider_error).
var errProviderCall = errors.New("provider call failed")
