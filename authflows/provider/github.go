package provider

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
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
var githubKind = Kind{
	Name:  "github",
	Title: "GitHub",
	flags: func(fs *pflag.FlagSet, c *Config) {
		fs.StringVar(&c.AuthURL, "github-auth-url", githubAuthURL, "GitHub authorization endpoint")
		fs.StringVar(&c.TokenURL, "github-token-url", githubTokenURL, "GitHub token endpoint")
		fs.StringVar(&c.APIURL, "github-api-url", githubAPIURL, "base URL of the GitHub API (GET /user, /user/emails, /user/orgs, /user/teams)")
		fs.StringSliceVar(&c.Orgs, "github-org", nil, "GitHub organization whose members earn the group github:ORG; asks for scope read:org (repeatable)")
		fs.StringSliceVar(&c.Teams, "github-team", nil, "GitHub team ORG/TEAM-SLUG whose members earn the group github:ORG/TEAM; asks for scope read:org (repeatable)")
	},
	enabled: func(c *Config) bool { return c.ClientID != "" },
	endpoints: func(c *Config) [][2]string {
		return [][2]string{{"github-auth-url", c.AuthURL}, {"github-token-url", c.TokenURL}, {"github-api-url", c.APIURL}}
	},
	check: func(c *Config) error {
		_, err := githubTeams(c.Teams)
		return err
	},
	setup: setupGitHub,
}

// githubTeams splits each --github-team value into org and team slug.
func githubTeams(teams []string) ([][2]string, error) {
	var out [][2]string
	for _, t := range teams {
		org, slug, ok := strings.Cut(t, "/")
		if !ok || org == "" || slug == "" || strings.Contains(slug, "/") {
			return nil, flagError("github-team", "%q: want ORG/TEAM-SLUG", t)
		}
		out = append(out, [2]string{org, slug})
	}
	return out, nil
}

func setupGitHub(_ context.Context, c Config, client *http.Client, _ func() time.Time) (providerSetup, error) {
	g := &githubIdentifier{apiURL: strings.TrimRight(cmp.Or(c.APIURL, githubAPIURL), "/"), client: client, orgs: c.Orgs}
	if err := CheckEndpointURL(g.apiURL); err != nil {
		return providerSetup{}, err
	}
	var err error
	if g.teams, err = githubTeams(c.Teams); err != nil {
		return providerSetup{}, err
	}
	scopes := []string{"read:user", "user:email"} // OA11
	if len(g.orgs) > 0 || len(g.teams) > 0 {
		scopes = append(scopes, "read:org")
	}
	return providerSetup{
		title:    "GitHub",
		endpoint: oauth2.Endpoint{AuthURL: cmp.Or(c.AuthURL, githubAuthURL), TokenURL: cmp.Or(c.TokenURL, githubTokenURL)},
		scopes:   scopes,
		identity: g,
	}, nil
}

// githubIdentifier identifies a GitHub account through the REST API.
type githubIdentifier struct {
	apiURL string
	client *http.Client
	orgs   []string
	teams  [][2]string // org, team slug
}

// identify reads GET /user (the numeric id, OA5), GET /user/emails (the
// primary address, used only when verified, OA6) and, when orgs or teams
// are configured, the memberships. Without read:org granted, or when a
// membership list cannot be read, the sign-in fails: groups are never
// guessed (fail closed).
func (g *githubIdentifier) identify(ctx context.Context, tok *oauth2.Token, check idCheck) (Identity, error) {
	api := apiCall{
		client: g.client, accessToken: tok.AccessToken, accept: "application/vnd.github+json",
		header: map[string]string{"X-GitHub-Api-Version": "2022-11-28"},
	}
	var user struct {
		ID    json.Number `json:"id"`
		Login string      `json:"login"`
	}
	if _, err := api.getJSON(ctx, "GET /user", g.apiURL+"/user", &user); err != nil {
		return Identity{}, err
	}
	n, err := strconv.ParseInt(user.ID.String(), 10, 64)
	if err != nil || n <= 0 {
		return Identity{}, providerError{msg: "GET /user: no numeric id"}
	}
	var emails []struct {
		Email    string `json:"email"`
		Primary  bool   `json:"primary"`
		Verified bool   `json:"verified"`
	}
	if _, err := api.getJSON(ctx, "GET /user/emails", g.apiURL+"/user/emails", &emails); err != nil {
		return Identity{}, err
	}
	id := Identity{Subject: strconv.FormatInt(n, 10)}
	if githubLogin(user.Login) {
		id.Login = user.Login
	}
	for _, e := range emails {
		if e.Primary {
			verifiedEmail(&id, e.Email, e.Verified)
		}
	}
	if len(g.orgs) == 0 && len(g.teams) == 0 {
		return id, nil
	}
	if !check.refreshed && !grantsReadOrg(tok) { // a refresh has no token response: /user/orgs answers for the token as granted
		return Identity{}, ScopeError{"read:org"}
	}
	if id.Groups, err = g.groups(ctx, api); err != nil {
		return Identity{}, err
	}
	return id, nil
}

// grantsReadOrg reports whether the token response's scope (GitHub: comma
// separated) grants read:org or a scope that includes it.
func grantsReadOrg(tok *oauth2.Token) bool {
	scope, _ := tok.Extra("scope").(string)
	for _, s := range strings.FieldsFunc(scope, func(r rune) bool { return r == ',' || r == ' ' }) {
		if s == "read:org" || s == "write:org" || s == "admin:org" {
			return true
		}
	}
	return false
}

// groups lists "github:ORG" for each configured org the account is a
// member of and "github:ORG/TEAM" for each configured team, spelled as
// configured.
func (g *githubIdentifier) groups(ctx context.Context, api apiCall) ([]string, error) {
	var out []string
	if len(g.orgs) > 0 {
		var orgs []struct {
			Login string `json:"login"`
		}
		if err := g.pages(ctx, api, "GET /user/orgs", "/user/orgs", func(raw json.RawMessage) error {
			var page []struct {
				Login string `json:"login"`
			}
			err := json.Unmarshal(raw, &page)
			orgs = append(orgs, page...)
			return err
		}); err != nil {
			return nil, err
		}
		for _, o := range orgs {
			if org, ok := containsFold(g.orgs, o.Login); ok {
				out = append(out, "github:"+org)
			}
		}
	}
	if len(g.teams) > 0 {
		type team struct {
			Slug         string `json:"slug"`
			Organization struct {
				Login string `json:"login"`
			} `json:"organization"`
		}
		var teams []team
		if err := g.pages(ctx, api, "GET /user/teams", "/user/teams", func(raw json.RawMessage) error {
			var page []team
			err := json.Unmarshal(raw, &page)
			teams = append(teams, page...)
			return err
		}); err != nil {
			return nil, err
		}
		for _, t := range teams {
			for _, want := range g.teams {
				if equalFold(t.Organization.Login, want[0]) && equalFold(t.Slug, want[1]) {
					out = append(out, "github:"+want[0]+"/"+want[1])
				}
			}
		}
	}
	return sortedUnique(out), nil
}

// maxGitHubPages bounds how many pages of a list Gatehouse reads (100
// entries each).
const maxGitHubPages = 20

// pages reads every page of a list endpoint, following the Link header's
// rel="next" while it stays on the API's origin (the token is never sent
// elsewhere).
func (g *githubIdentifier) pages(ctx context.Context, api apiCall, step, path string, add func(json.RawMessage) error) error {
	next := g.apiURL + path + "?per_page=100"
	for range maxGitHubPages {
		var raw json.RawMessage
		h, err := api.getJSON(ctx, step, next, &raw)
		if err != nil {
			return err
		}
		if err := add(raw); err != nil {
			return providerError{msg: step + ": answer is not the expected JSON"}
		}
		next = nextLink(h.Get("Link"))
		if next == "" {
			return nil
		}
		if !sameOrigin(next, g.apiURL) {
			return providerError{msg: step + ": next page on another host"}
		}
	}
	return providerError{msg: step + ": more than " + strconv.Itoa(maxGitHubPages) + " pages"}
}

// nextLink is the rel="next" target of a Link header (RFC 8288), or "".
func nextLink(header string) string {
	for part := range strings.SplitSeq(header, ",") {
		target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
		if !ok || !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
			continue
		}
		for p := range strings.SplitSeq(params, ";") {
			if slices.Contains(strings.Fields(strings.Trim(strings.TrimPrefix(strings.TrimSpace(p), "rel="), `"`)), "next") {
				return strings.Trim(target, "<>")
			}
		}
	}
	return ""
}

func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && equalFold(ua.Host, ub.Host)
}

// ScopeError is a token that lacks a scope the configuration needs: the
// sign-in is refused (403 insufficient_scope), fail closed.
type ScopeError struct{ scope string }

func (e ScopeError) Error() string { return "token lacks scope " + e.scope }

// githubLogin reports whether s is a GitHub login: 1 to 39 ASCII letters,
// digits and hyphens.
func githubLogin(s string) bool {
	if len(s) == 0 || len(s) > 39 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
