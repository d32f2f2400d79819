package authflows

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"golang.org/x/oauth2"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// ProviderConfig is one configured sign-in provider (seed: OAuthConfig).
// Which fields count depends on the kind named by Name; empty endpoint
// fields take the provider's public defaults.
type ProviderConfig struct {
	Name         string // a kind of ProviderKinds: "google", "github" or "oidc"
	ClientID     string
	ClientSecret string
	RedirectURL  string // must be {base-url}/auth/callback/{Name}
	AuthURL      string // google, github
	TokenURL     string // google, github
	UserinfoURL  string // google
	JWKSURL      string // google: the key set that signs its ID tokens
	APIURL       string // github: base of GET /user, /user/emails, /user/orgs, /user/teams
	// Issuer is the iss an ID token must carry. Google: empty means
	// Google's ("https://accounts.google.com" or "accounts.google.com");
	// tests point it at their fake. OIDC: the issuer URL whose discovery
	// document configures the provider (--oidc-issuer-url).
	Issuer string

	Title       string   // oidc: the button label
	Scopes      []string // oidc: the scopes asked for
	GroupsClaim string   // oidc: the ID token claim holding the user's groups

	Orgs          []string // github: organizations reported as groups "github:ORG"
	Teams         []string // github: "org/team-slug", reported as "github:ORG/TEAM"
	HostedDomains []string // google: hd values reported as "google:HD"

	// discoveryWait bounds the retries of OIDC discovery at start
	// (default 30 s); tests shorten it.
	discoveryWait time.Duration
}

// identifier is a provider kind's own step: who the account behind a token
// response is. Each kind (oauth_google.go, oauth_github.go, oauth_oidc.go)
// has one; the flows never ask a provider's name.
type identifier interface {
	identify(ctx context.Context, tok *oauth2.Token, nonce string) (providerIdentity, error)
}

// providerSetup is what a kind builds from its configuration.
type providerSetup struct {
	title    string
	endpoint oauth2.Endpoint
	scopes   []string
	nonce    bool // the authorization carries an OIDC nonce
	identity identifier
}

// providerTimeout bounds each call to a provider (token exchange, user API).
const providerTimeout = 10 * time.Second

// provider is a configured provider: its OAuth client and how it identifies
// an account. It never holds a user's token.
type provider struct {
	Name  string // as in the URL and in storage.Identity.Provider
	Title string // for pages: "Google", "GitHub", --oidc-title
	nonce bool
	oauth *oauth2.Config
	id    identifier
	// client is used for every call to the provider, with timeouts.
	client *http.Client
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
// clock now. An unsupported name, a provider listed twice, one without
// client id, secret or redirect URL, or one whose setup fails (an http://
// endpoint off loopback, an OIDC issuer that cannot be discovered) is an
// error (cmd/gatehouse reports bad flags first; this is the backstop).
func newProviders(ctx context.Context, cfgs []ProviderConfig, now func() time.Time) (map[string]*provider, error) {
	m := map[string]*provider{}
	for _, c := range cfgs {
		kind, ok := providerKind(c.Name)
		switch {
		case !ok:
			return nil, fmt.Errorf("authflows: unsupported OAuth provider %q", c.Name)
		case m[c.Name] != nil:
			return nil, fmt.Errorf("authflows: OAuth provider %q configured twice", c.Name)
		case c.ClientID == "" || c.ClientSecret == "" || c.RedirectURL == "":
			return nil, fmt.Errorf("authflows: OAuth provider %q needs a client id, a client secret and a redirect URL", c.Name)
		}
		client := newProviderClient()
		setup, err := kind.setup(ctx, c, client, now)
		if err != nil {
			return nil, err
		}
		for _, e := range []string{setup.endpoint.AuthURL, setup.endpoint.TokenURL} {
			if err := CheckEndpointURL(e); err != nil {
				return nil, fmt.Errorf("authflows: %s endpoint: %w", c.Name, err)
			}
		}
		// Every provider takes the client credentials in the body; a fixed
		// style avoids x/oauth2 retrying a failed exchange with the other.
		setup.endpoint.AuthStyle = oauth2.AuthStyleInParams
		m[c.Name] = &provider{
			Name:   c.Name,
			Title:  setup.title,
			nonce:  setup.nonce,
			id:     setup.identity,
			client: client,
			starts: newKeyedLimiter(flowStartBurst, flowStartPeriod, now),
			oauth: &oauth2.Config{
				ClientID:     c.ClientID,
				ClientSecret: c.ClientSecret,
				RedirectURL:  c.RedirectURL,
				Scopes:       setup.scopes,
				Endpoint:     setup.endpoint,
			},
		}
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
	for _, k := range providerKinds {
		if p, ok := h.oauth[k.Name]; ok {
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
	if _, ok := providerKind(name); !ok {
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
func (h *Handler) providerTitle(name string) string {
	if p, ok := h.oauth[name]; ok {
		return p.Title
	}
	if k, ok := providerKind(name); ok {
		return k.Title
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

// sortedUnique returns the distinct values of s in order.
func sortedUnique(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}
