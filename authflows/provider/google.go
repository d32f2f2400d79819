package provider

import (
	"cmp"
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/spf13/pflag"
	"golang.org/x/oauth2"
)

// Google's public endpoints and issuer.
const (
	googleAuthURL     = "https://accounts.google.com/o/oauth2/v2/auth"
	googleTokenURL    = "https://oauth2.googleapis.com/token"
	googleUserinfoURL = "https://openidconnect.googleapis.com/v1/userinfo"
	googleJWKSURL     = "https://www.googleapis.com/oauth2/v3/certs"
	// googleIssuer is the iss of Google's ID tokens; go-oidc also accepts
	// the spelling without scheme, "accounts.google.com".
	googleIssuer = "https://accounts.google.com"
)

// googleKind is Google: an OpenID provider with a fixed issuer and key set,
// verified like any other (ID1).
var googleKind = Kind{
	Name:  "google",
	Title: "Google",
	flags: func(fs *pflag.FlagSet, c *Config) {
		fs.StringVar(&c.AuthURL, "google-auth-url", googleAuthURL, "Google authorization endpoint")
		fs.StringVar(&c.TokenURL, "google-token-url", googleTokenURL, "Google token endpoint")
		fs.StringVar(&c.UserinfoURL, "google-userinfo-url", googleUserinfoURL, "Google userinfo endpoint")
		fs.StringVar(&c.JWKSURL, "google-jwks-url", googleJWKSURL, "the key set (JWKS) that signs Google's ID tokens")
		fs.StringSliceVar(&c.HostedDomains, "google-hosted-domain", nil, "Google Workspace domain (the ID token's hd claim) that earns the group google:DOMAIN (repeatable)")
	},
	enabled: func(c *Config) bool { return c.ClientID != "" },
	endpoints: func(c *Config) [][2]string {
		return [][2]string{{"google-auth-url", c.AuthURL}, {"google-token-url", c.TokenURL}, {"google-userinfo-url", c.UserinfoURL}, {"google-jwks-url", c.JWKSURL}}
	},
	setup: setupGoogle,
}

func setupGoogle(ctx context.Context, c Config, client *http.Client, now func() time.Time) (providerSetup, error) {
	g := &googleIdentifier{
		userinfoURL:   cmp.Or(c.UserinfoURL, googleUserinfoURL),
		client:        client,
		hostedDomains: c.HostedDomains,
	}
	jwks := cmp.Or(c.JWKSURL, googleJWKSURL)
	for _, e := range []string{g.userinfoURL, jwks} {
		if err := CheckEndpointURL(e); err != nil {
			return providerSetup{}, err
		}
	}
	keys := newAgingKeySet(oidc.ClientContext(ctx, client), jwks, now)
	g.verify = newIDTokenVerifier(cmp.Or(c.Issuer, googleIssuer), keys, c.ClientID, nil, now)
	var params map[string]string
	if c.Offline {
		// Google sends a refresh token only for access_type=offline, and
		// only at a consent: prompt=consent asks for it at every sign-in.
		params = map[string]string{"access_type": "offline", "prompt": "consent"}
	}
	return providerSetup{
		authParams: params,
		title:      "Google",
		endpoint:   oauth2.Endpoint{AuthURL: cmp.Or(c.AuthURL, googleAuthURL), TokenURL: cmp.Or(c.TokenURL, googleTokenURL)},
		scopes:     []string{"openid", "email", "profile"}, // OA11
		nonce:      true,
		identity:   g,
	}, nil
}

// googleIdentifier identifies a Google account by its verified ID token.
type googleIdentifier struct {
	verify        *idTokenVerifier
	userinfoURL   string
	client        *http.Client
	hostedDomains []string
}

// identify verifies the ID token of the token response (ID1, OA2) and reads
// sub, the email when verified (from /userinfo when the token has none) and
// hd. The group google:HD comes from the verified token only, never from
// /userinfo.
func (g *googleIdentifier) identify(ctx context.Context, tok *oauth2.Token, check idCheck) (Identity, error) {
	raw, _ := tok.Extra("id_token").(string)
	idt, c, err := g.verify.verify(ctx, raw, check)
	if err != nil {
		return Identity{}, err
	}
	id := Identity{Subject: idt.Subject}
	email, verified := c.Email, bool(c.EmailVerified)
	if email == "" {
		// The token carries no email claim: ask /userinfo with the
		// access token, for the same subject.
		var info struct {
			Subject       string       `json:"sub"`
			Email         string       `json:"email"`
			EmailVerified flexibleBool `json:"email_verified"`
		}
		api := apiCall{client: g.client, accessToken: tok.AccessToken}
		if _, err := api.getJSON(ctx, "userinfo", g.userinfoURL, &info); err != nil {
			return Identity{}, err
		}
		if info.Subject != idt.Subject {
			return Identity{}, providerError{msg: "userinfo: subject differs from the ID token"}
		}
		email, verified = info.Email, bool(info.EmailVerified)
	}
	verifiedEmail(&id, email, verified)
	if hd, ok := containsFold(g.hostedDomains, c.HostedDomain); ok && c.HostedDomain != "" {
		id.Groups = []string{"google:" + strings.ToLower(hd)}
	}
	return id, nil
}
