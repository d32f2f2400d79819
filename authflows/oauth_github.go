package authflows

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/oauth2"
)

// GitHub's public endpoints.
const (
	githubAuthURL  = "https://github.com/login/oauth/authorize"
	githubTokenURL = "https://github.com/login/oauth/access_token"
	githubAPIURL   = "https://api.github.com"
)

// githubKind is GitHub (or GitHub Enterprise): plain OAuth 2.0, the account
// read from its REST API.
var githubKind = ProviderKind{
	Name:  "github",
	Title: "GitHub",
	flags: func(fs *pflag.FlagSet, c *ProviderConfig) {
		fs.StringVar(&c.AuthURL, "github-auth-url", githubAuthURL, "GitHub authorization endpoint")
		fs.StringVar(&c.TokenURL, "github-token-url", githubTokenURL, "GitHub token endpoint")
		fs.StringVar(&c.APIURL, "github-api-url", githubAPIURL, "base URL of the GitHub API (GET /user, GET /user/emails)")
	},
	enabled: func(c *ProviderConfig) bool { return c.ClientID != "" },
	endpoints: func(c *ProviderConfig) [][2]string {
		return [][2]string{{"github-auth-url", c.AuthURL}, {"github-token-url", c.TokenURL}, {"github-api-url", c.APIURL}}
	},
	setup: setupGitHub,
}

func setupGitHub(_ context.Context, c ProviderConfig, client *http.Client, _ func() time.Time) (providerSetup, error) {
	g := &githubIdentifier{apiURL: strings.TrimRight(or(c.APIURL, githubAPIURL), "/"), client: client}
	if err := CheckEndpointURL(g.apiURL); err != nil {
		return providerSetup{}, err
	}
	return providerSetup{
		title:    "GitHub",
		endpoint: oauth2.Endpoint{AuthURL: or(c.AuthURL, githubAuthURL), TokenURL: or(c.TokenURL, githubTokenURL)},
		scopes:   []string{"read:user", "user:email"}, // OA11
		identity: g,
	}, nil
}

// githubIdentifier identifies a GitHub account through the REST API.
type githubIdentifier struct {
	apiURL string
	client *http.Client
}

// identify reads GET /user (the numeric id, OA5) and GET /user/emails (the
// primary address, used only when verified, OA6).
func (g *githubIdentifier) identify(ctx context.Context, tok *oauth2.Token, _ string) (providerIdentity, error) {
	api := apiCall{
		client: g.client, accessToken: tok.AccessToken, accept: "application/vnd.github+json",
		header: map[string]string{"X-GitHub-Api-Version": "2022-11-28"},
	}
	var user struct {
		ID json.Number `json:"id"`
	}
	if _, err := api.getJSON(ctx, "GET /user", g.apiURL+"/user", &user); err != nil {
		return providerIdentity{}, err
	}
	n, err := strconv.ParseInt(user.ID.String(), 10, 64)
	if err != nil || n <= 0 {
		return providerIdentity{}, providerError{"GET /user: no numeric id"}
	}
	var emails []struct {
		Email    string `json:"email"`
		Primary  bool   `json:"primary"`
		Verified bool   `json:"verified"`
	}
	if _, err := api.getJSON(ctx, "GET /user/emails", g.apiURL+"/user/emails", &emails); err != nil {
		return providerIdentity{}, err
	}
	id := providerIdentity{Subject: strconv.FormatInt(n, 10)}
	for _, e := range emails {
		if e.Primary {
			verifiedEmail(&id, e.Email, e.Verified)
		}
	}
	return id, nil
}
