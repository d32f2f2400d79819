package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"golang.org/x/oauth2"

	"github.com/gatehouse-auth/gatehouse/proxy/idpclient"
)

// Config is one configured sign-in provider.
// Which fields count depends on the kind named by Name; empty endpoint
// fields take the provider's public defaults.
type Config struct {
	Name         string // a kind of Kinds: "google", "github" or "oidc"
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

	// DiscoveryWait bounds the retries of OIDC discovery at start
	// (0: 30 s); tests shorten it.
	DiscoveryWait time.Duration

	// Offline asks for a refresh token where the kind must ask for one
	// (google: access_type=offline, prompt=consent): set when the sign-in
	// will be checked again (authflows: a token key and --session-refresh).
	Offline bool
}

// identifier is a provider kind's own step: who the account behind a token
// response is. Each kind (google.go, github.go, oidc.go)
// has one; the flows never ask a provider's name.
type identifier interface {
	identify(ctx context.Context, tok *oauth2.Token, check idCheck) (Identity, error)
}

// idCheck is what a token response must match beyond the ID token's
// signature, iss, aud and exp: at sign-in, the flow's nonce; at a refresh
// (refreshed), nothing more: there is no flow, and the caller checks that
// the account is the sign-in's.
type idCheck struct {
	nonce     string
	refreshed bool
}

// providerSetup is what a kind builds from its configuration.
type providerSetup struct {
	title    string
	endpoint oauth2.Endpoint
	scopes   []string
	nonce    bool // the authorization carries an OIDC nonce
	identity identifier
	// authParams are extra parameters of the authorization request.
	authParams map[string]string
}

// Provider is a configured provider: its OAuth client and how it identifies
// an account. It never holds a user's token.
type Provider struct {
	Name  string // as in the URL and in storage.Identity.Provider
	Title string // for pages: "Google", "GitHub", --oidc-title
	nonce bool
	// authParams are extra parameters of the authorization request
	// (Google's access_type=offline).
	authParams map[string]string
	oauth      *oauth2.Config
	id         identifier
	// client is used for every call to the provider, with timeouts.
	client *http.Client
}

// New builds the configured providers, on the clock now. An unsupported
// name, a provider listed twice, one without client id, secret or redirect
// URL, or one whose setup fails (an http:// endpoint off loopback, an OIDC
// issuer that cannot be discovered) is an error (cmd/gatehouse reports bad
// flags first; this is the backstop).
func New(ctx context.Context, cfgs []Config, now func() time.Time) (map[string]*Provider, error) {
	m := map[string]*Provider{}
	for _, c := range cfgs {
		kind, ok := KindOf(c.Name)
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
		m[c.Name] = &Provider{
			Name:       c.Name,
			Title:      setup.title,
			nonce:      setup.nonce,
			authParams: setup.authParams,
			id:         setup.identity,
			client:     client,
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

// UsesNonce reports whether the authorization carries an OIDC nonce, which
// the flow must then mint and keep for Identify.
func (p *Provider) UsesNonce() bool { return p.nonce }

// AuthCodeURL is the provider's authorization URL for a flow: state, the
// PKCE S256 challenge of verifier (OA3) and, when the provider uses one,
// nonce.
func (p *Provider) AuthCodeURL(state, verifier, nonce string) string {
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	if p.nonce {
		opts = append(opts, oauth2.SetAuthURLParam("nonce", nonce))
	}
	for k, v := range p.authParams {
		opts = append(opts, oauth2.SetAuthURLParam(k, v))
	}
	return p.oauth.AuthCodeURL(state, opts...)
}

// callContext is the context of calls to the provider: its HTTP client (with
// timeouts) for x/oauth2, and an overall deadline.
func (p *Provider) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx = context.WithValue(ctx, oauth2.HTTPClient, p.client)
	return context.WithTimeout(ctx, 2*idpclient.Timeout)
}

// ErrCall marks a failed call to the provider (502 provider_error).
var ErrCall = errors.New("provider call failed")

// ErrClientRejected marks a token exchange the provider refused because of
// Gatehouse's own client credentials (invalid_client, GitHub's
// incorrect_client_credentials, HTTP 401): the operator's mistake, not the
// user's. It comes wrapped with ErrCall.
var ErrClientRejected = errors.New("client id or secret refused")

// sortedUnique returns the distinct values of s in order.
func sortedUnique(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}
