package authflows

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// providerIdentity is who the provider says the user is. Subject is the
// provider's stable user id (Google sub, GitHub numeric id: OA5); Email is
// set only when the provider vouches for it (OA6).
type providerIdentity struct {
	Subject       string
	Email         string // normalized; "" unless verified
	EmailVerified bool
}

// providerError is a failed exchange or user API call (502 provider_error).
// Its message names the step and the provider's status or error code, never
// a code, token or response body (LG1).
type providerError struct{ msg string }

func (e providerError) Error() string { return e.msg }
func (e providerError) Unwrap() error { return errProviderCall }

// idTokenError is an ID token that fails a check (400 invalid_id_token).
type idTokenError struct{ reason string }

func (e idTokenError) Error() string { return "id token: " + e.reason }

// identify redeems code with the flow's PKCE verifier and the configured
// redirect_uri (OA3) and returns the provider's account. The provider's
// tokens live only in this call: never stored, logged or forwarded (OA11).
func (p *provider) identify(ctx context.Context, code string, flow storage.OAuthFlow, now time.Time) (providerIdentity, error) {
	ctx, cancel := p.callContext(ctx)
	defer cancel()
	tok, err := p.oauth.Exchange(ctx, code, oauth2.VerifierOption(flow.Verifier))
	if err != nil {
		return providerIdentity{}, exchangeError(err)
	}
	if p.kind.oidc {
		return p.googleIdentity(ctx, tok, flow.Nonce, now)
	}
	return p.githubIdentity(ctx, tok.AccessToken)
}

// exchangeError describes a failed token exchange without its body, which a
// provider may fill with anything.
func exchangeError(err error) error {
	var re *oauth2.RetrieveError
	var ue *url.Error
	switch {
	case errors.As(err, &re) && re.ErrorCode != "":
		return providerError{"token exchange: error " + strconv.Quote(clip(re.ErrorCode, 64))}
	case errors.As(err, &re) && re.Response != nil:
		return providerError{fmt.Sprintf("token exchange: HTTP %d", re.Response.StatusCode)}
	case errors.As(err, &ue):
		return providerError{"token exchange: " + ue.Err.Error()}
	}
	return providerError{"token exchange: " + clip(err.Error(), 200)}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
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

// googleIdentity reads the ID token of the token response. It arrived over
// TLS straight from the token endpoint, so its signature need not be checked
// (OIDC Core 3.1.3.7); iss, aud, exp and nonce are (OA2).
func (p *provider) googleIdentity(ctx context.Context, tok *oauth2.Token, nonce string, now time.Time) (providerIdentity, error) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return providerIdentity{}, idTokenError{"missing from the token response"}
	}
	c, err := parseIDToken(raw)
	if err != nil {
		return providerIdentity{}, err
	}
	if err := p.checkIDToken(c, nonce, now); err != nil {
		return providerIdentity{}, err
	}
	id := providerIdentity{Subject: c.Subject}
	email, verified := c.Email, bool(c.EmailVerified)
	if email == "" {
		// The token carries no email claim: ask /userinfo with the
		// access token, for the same subject.
		info, err := p.googleUserinfo(ctx, tok.AccessToken)
		if err != nil {
			return providerIdentity{}, err
		}
		if info.Subject != c.Subject {
			return providerIdentity{}, providerError{"userinfo: subject differs from the ID token"}
		}
		email, verified = info.Email, bool(info.EmailVerified)
	}
	if valid, ok := validProviderEmail(email); verified && ok {
		id.Email, id.EmailVerified = valid, true
	}
	return id, nil
}

// parseIDToken decodes the claims of a compact JWS without checking its
// signature (see googleIdentity).
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
func (p *provider) checkIDToken(c idTokenClaims, nonce string, now time.Time) error {
	if !slices.Contains(p.issuers, c.Issuer) {
		return idTokenError{"unexpected issuer"}
	}
	clientID := p.oauth.ClientID
	if !slices.Contains(c.Audience, clientID) {
		return idTokenError{"audience is not this client"}
	}
	if (len(c.Audience) > 1 || c.AuthorizedParty != "") && c.AuthorizedParty != clientID {
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

// googleUserinfo is the answer of Google's userinfo endpoint.
type googleUserinfo struct {
	Subject       string       `json:"sub"`
	Email         string       `json:"email"`
	EmailVerified flexibleBool `json:"email_verified"`
}

func (p *provider) googleUserinfo(ctx context.Context, accessToken string) (googleUserinfo, error) {
	var info googleUserinfo
	err := p.getJSON(ctx, "userinfo", p.infoURL, accessToken, &info)
	return info, err
}

// githubIdentity reads GET /user (the numeric id, OA5) and GET /user/emails
// (the primary address, used only when verified, OA6).
func (p *provider) githubIdentity(ctx context.Context, accessToken string) (providerIdentity, error) {
	base := strings.TrimRight(p.infoURL, "/")
	var user struct {
		ID json.Number `json:"id"`
	}
	if err := p.getJSON(ctx, "GET /user", base+"/user", accessToken, &user); err != nil {
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
	if err := p.getJSON(ctx, "GET /user/emails", base+"/user/emails", accessToken, &emails); err != nil {
		return providerIdentity{}, err
	}
	id := providerIdentity{Subject: strconv.FormatInt(n, 10)}
	for _, e := range emails {
		if valid, ok := validProviderEmail(e.Email); e.Primary && e.Verified && ok {
			id.Email, id.EmailVerified = valid, true
		}
	}
	return id, nil
}

// maxProviderResponse caps what Gatehouse reads of a provider's answer.
const maxProviderResponse = 1 << 20

// getJSON GETs target with the access token and decodes the JSON answer into v.
func (p *provider) getJSON(ctx context.Context, step, target, accessToken string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return providerError{step + ": bad endpoint URL"}
	}
	req.Header.Set("Authorization", "Bearer "+accessToken)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "gatehouse")
	if p.Name == "github" {
		req.Header.Set("Accept", "application/vnd.github+json")
		req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return providerError{step + ": " + clip(err.Error(), 200)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxProviderResponse))
		return providerError{fmt.Sprintf("%s: HTTP %d", step, resp.StatusCode)}
	}
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxProviderResponse))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return providerError{step + ": answer is not the expected JSON"}
	}
	return nil
}
