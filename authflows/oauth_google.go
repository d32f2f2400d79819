package authflows

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/oauth2"
)

// Google's public endpoints.
const (
	googleAuthURL     = "https://accounts.google.com/o/oauth2/v2/auth"
	googleTokenURL    = "https://oauth2.googleapis.com/token"
	googleUserinfoURL = "https://openidconnect.googleapis.com/v1/userinfo"
)

// googleIssuers are the two spellings of the iss of Google's ID tokens.
var googleIssuers = []string{"https://accounts.google.com", "accounts.google.com"}

// googleKind is Google: an OpenID provider whose ID token names the account.
var googleKind = ProviderKind{
	Name:  "google",
	Title: "Google",
	flags: func(fs *pflag.FlagSet, c *ProviderConfig) {
		fs.StringVar(&c.AuthURL, "google-auth-url", googleAuthURL, "Google authorization endpoint")
		fs.StringVar(&c.TokenURL, "google-token-url", googleTokenURL, "Google token endpoint")
		fs.StringVar(&c.UserinfoURL, "google-userinfo-url", googleUserinfoURL, "Google userinfo endpoint")
	},
	enabled: func(c *ProviderConfig) bool { return c.ClientID != "" },
	endpoints: func(c *ProviderConfig) [][2]string {
		return [][2]string{{"google-auth-url", c.AuthURL}, {"google-token-url", c.TokenURL}, {"google-userinfo-url", c.UserinfoURL}}
	},
	setup: setupGoogle,
}

func setupGoogle(_ context.Context, c ProviderConfig, client *http.Client, now func() time.Time) (providerSetup, error) {
	g := &googleIdentifier{
		userinfoURL: or(c.UserinfoURL, googleUserinfoURL),
		client:      client,
		clientID:    c.ClientID,
		issuers:     googleIssuers,
		now:         now,
	}
	if c.Issuer != "" {
		g.issuers = []string{c.Issuer}
	}
	return providerSetup{
		title:    "Google",
		endpoint: oauth2.Endpoint{AuthURL: or(c.AuthURL, googleAuthURL), TokenURL: or(c.TokenURL, googleTokenURL)},
		scopes:   []string{"openid", "email", "profile"}, // OA11
		nonce:    true,
		identity: g,
	}, nil
}

// googleIdentifier identifies a Google account by its ID token.
type googleIdentifier struct {
	userinfoURL string
	client      *http.Client
	clientID    string
	issuers     []string
	now         func() time.Time
}

// idTokenError is an ID token that fails a check (400 invalid_id_token).
type idTokenError struct{ reason string }

func (e idTokenError) Error() string { return "id token: " + e.reason }

// identify reads the ID token of the token response. It arrived over TLS
// straight from the token endpoint, so its signature need not be checked
// (OIDC Core 3.1.3.7); iss, aud, exp and nonce are (OA2). Without an email
// claim the email comes from /userinfo, for the same subject.
func (g *googleIdentifier) identify(ctx context.Context, tok *oauth2.Token, nonce string) (providerIdentity, error) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return providerIdentity{}, idTokenError{"missing from the token response"}
	}
	c, err := parseIDToken(raw)
	if err != nil {
		return providerIdentity{}, err
	}
	if err := g.checkIDToken(c, nonce, g.now()); err != nil {
		return providerIdentity{}, err
	}
	id := providerIdentity{Subject: c.Subject}
	email, verified := c.Email, bool(c.EmailVerified)
	if email == "" {
		var info struct {
			Subject       string       `json:"sub"`
			Email         string       `json:"email"`
			EmailVerified flexibleBool `json:"email_verified"`
		}
		api := apiCall{client: g.client, accessToken: tok.AccessToken}
		if _, err := api.getJSON(ctx, "userinfo", g.userinfoURL, &info); err != nil {
			return providerIdentity{}, err
		}
		if info.Subject != c.Subject {
			return providerIdentity{}, providerError{"userinfo: subject differs from the ID token"}
		}
		email, verified = info.Email, bool(info.EmailVerified)
	}
	verifiedEmail(&id, email, verified)
	return id, nil
}

// idTokenClaims are the claims Gatehouse reads from Google's ID token.
type idTokenClaims struct {
	Issuer          string       `json:"iss"`
	Audience        audience     `json:"aud"`
	AuthorizedParty string       `json:"azp"`
	Expiry          json.Number  `json:"exp"`
	Nonce           string       `json:"nonce"`
	Subject         string       `json:"sub"`
	Email           string       `json:"email"`
	EmailVerified   flexibleBool `json:"email_verified"`
}

// audience is a JSON string or array of strings.
type audience []string

func (a *audience) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*a = audience{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("aud is neither a string nor a list of strings")
	}
	*a = many
	return nil
}

// flexibleBool is a JSON boolean, or the strings "true"/"false" that some
// Google tokens carried.
type flexibleBool bool

func (f *flexibleBool) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v := v.(type) {
	case bool:
		*f = flexibleBool(v)
	case string:
		*f = flexibleBool(v == "true")
	default:
		*f = false
	}
	return nil
}

// parseIDToken decodes the claims of a compact JWS without checking its
// signature (see identify).
func parseIDToken(raw string) (idTokenClaims, error) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return idTokenClaims{}, idTokenError{"not a compact JWS"}
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return idTokenClaims{}, idTokenError{"payload is not base64url"}
	}
	var c idTokenClaims
	dec := json.NewDecoder(strings.NewReader(string(payload)))
	dec.UseNumber()
	if err := dec.Decode(&c); err != nil {
		return idTokenClaims{}, idTokenError{"payload is not a claims object"}
	}
	return c, nil
}

// checkIDToken applies OIDC Core 3.1.3.7: the issuer is Google (or the
// configured one), the audience is our client id (and when there are
// several, azp is ours), the token has not expired at now, and the nonce is
// the one this flow sent.
func (g *googleIdentifier) checkIDToken(c idTokenClaims, nonce string, now time.Time) error {
	if !slices.Contains(g.issuers, c.Issuer) {
		return idTokenError{"unexpected issuer"}
	}
	if !slices.Contains(c.Audience, g.clientID) {
		return idTokenError{"audience is not this client"}
	}
	if (len(c.Audience) > 1 || c.AuthorizedParty != "") && c.AuthorizedParty != g.clientID {
		return idTokenError{"authorized party is not this client"}
	}
	exp, err := c.Expiry.Float64()
	if err != nil {
		return idTokenError{"exp missing or not a number"}
	}
	if !now.Before(time.Unix(int64(exp), 0)) {
		return idTokenError{"expired"}
	}
	if nonce == "" || subtle.ConstantTimeCompare([]byte(c.Nonce), []byte(nonce)) != 1 {
		return idTokenError{"nonce does not match"}
	}
	if c.Subject == "" {
		return idTokenError{"sub missing"}
	}
	return nil
}
