package provider

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"golang.org/x/oauth2"

	"github.com/gatehouse-auth/gatehouse/authflows/seal"
	"github.com/gatehouse-auth/gatehouse/proxy/idpclient"
)

// Identity is who the provider says the user is. Subject is the
// provider's stable user id (Google sub, GitHub numeric id, OIDC iss+sub:
// OA5); Email is set only when the provider vouches for it (OA6). Groups
// are what the sign-in earned: "github:ORG", "github:ORG/TEAM" for the
// configured orgs and teams the account belongs to, "google:HD" when the
// verified ID token's hd is a configured hosted domain, "oidc:GROUP" for
// each entry of the groups claim.
type Identity struct {
	Subject       string
	Email         string // normalized; "" unless verified
	EmailVerified bool
	// Groups are what the provider vouches for about the account, for the
	// access policy and X-Forwarded-Groups: "github:ORG", "github:ORG/TEAM",
	// "google:HD" (from the verified ID token only), "oidc:GROUP".
	Groups []string
	// Login is the account's name at the provider where it has one
	// (GitHub's login), checked to be one: for pages that say who signed
	// in, never a key (OA5).
	Login string
	// SID is the OpenID Provider's session id (the ID token's sid), kept
	// for its back-channel logout; empty when it sends none.
	SID string
	// Tokens are the provider's tokens of this sign-in, for Reidentify
	// later; the caller keeps them only sealed (authflows/seal), or not
	// at all.
	Tokens seal.Tokens
}

// providerError is a failed exchange or user API call (502 provider_error).
// Its message names the step and the provider's status or error code, never
// a code, token or response body (LG1).
type providerError struct {
	msg    string
	status int // the user API's HTTP status, 0 when it did not answer
}

func (e providerError) Error() string { return e.msg }
func (e providerError) Unwrap() error { return ErrCall }

// clientRejected is a token exchange refused for the client's credentials.
type clientRejected struct{ providerError }

func (e clientRejected) Unwrap() []error { return []error{ErrCall, ErrClientRejected} }

// Identify redeems code with the flow's PKCE verifier and the configured
// redirect_uri (OA3), then lets the provider's kind identify the account
// (checking nonce where the kind uses one). The provider's tokens come back
// in Identity.Tokens, never logged or forwarded (OA11), and kept only
// sealed. Errors: IDTokenError, ScopeError, or another that wraps ErrCall.
func (p *Provider) Identify(ctx context.Context, code, verifier, nonce string) (Identity, error) {
	ctx, cancel := p.callContext(ctx)
	defer cancel()
	tok, err := p.oauth.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		return Identity{}, exchangeError(err)
	}
	id, err := p.id.identify(ctx, tok, idCheck{nonce: nonce})
	if err != nil {
		return Identity{}, err
	}
	id.Tokens = tokensOf(tok, seal.Tokens{})
	return id, nil
}

// tokensOf is what to keep of a token response: its tokens, each falling
// back to before's when the response has none (a refresh answer often
// carries no new refresh token).
func tokensOf(tok *oauth2.Token, before seal.Tokens) seal.Tokens {
	t := before
	t.Access, t.Expiry = tok.AccessToken, tok.Expiry
	if tok.RefreshToken != "" {
		t.Refresh = tok.RefreshToken
	}
	if raw, _ := tok.Extra("id_token").(string); raw != "" {
		t.IDToken = raw
	}
	return t
}

// exchangeError describes a failed token exchange without its body, which a
// provider may fill with anything.
func exchangeError(err error) error {
	var re *oauth2.RetrieveError
	var ue *url.Error
	switch {
	case errors.As(err, &re) && re.ErrorCode != "":
		e := providerError{msg: "token exchange: error " + strconv.Quote(clip(re.ErrorCode, 64))}
		switch re.ErrorCode {
		case "invalid_client", "unauthorized_client", "incorrect_client_credentials":
			return clientRejected{e}
		}
		return e
	case errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == http.StatusUnauthorized:
		return clientRejected{providerError{msg: "token exchange: HTTP 401"}}
	case errors.As(err, &re) && re.Response != nil:
		return providerError{msg: fmt.Sprintf("token exchange: HTTP %d", re.Response.StatusCode)}
	case errors.As(err, &ue):
		return providerError{msg: "token exchange: " + ue.Err.Error()}
	}
	return providerError{msg: "token exchange: " + clip(err.Error(), 200)}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// equalFold compares provider names (GitHub logins and team slugs, Google
// hosted domains: all ASCII) ignoring ASCII case only. strings.EqualFold
// would also fold Unicode letters into ASCII ones (KELVIN SIGN and k), so
// that another name would match.
func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// verifiedEmail is the normalized address when the provider vouches for it.
// Every provider kind takes its email through here, so an address that is
// not one plain, printable address counts as no email at all (EM1).
func verifiedEmail(id *Identity, email string, verified bool) {
	if !verified || email == "" {
		return
	}
	if normalized, ok := validProviderEmail(email); ok {
		id.Email, id.EmailVerified = normalized, true
	}
}

// apiCall is one GET to a provider's user API with the access token.
type apiCall struct {
	client      *http.Client
	accessToken string
	accept      string            // Accept header; default application/json
	header      map[string]string // more request headers
}

// getJSON GETs target and decodes the JSON answer into v; it returns the
// answer's headers (GitHub's Link for pagination). step names the call in
// errors.
func (a apiCall) getJSON(ctx context.Context, step, target string, v any) (http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, providerError{msg: step + ": bad endpoint URL"}
	}
	req.Header.Set("Authorization", "Bearer "+a.accessToken)
	req.Header.Set("Accept", cmp.Or(a.accept, "application/json"))
	req.Header.Set("User-Agent", "gatehouse")
	for k, v := range a.header {
		req.Header.Set(k, v)
	}
	// A redirect is followed only on the endpoint's own origin: Go's client
	// would keep the Authorization header for another port of the same
	// host, and the token is never sent anywhere else.
	client := *a.client
	client.CheckRedirect = func(next *http.Request, via []*http.Request) error {
		if len(via) >= 10 || !sameOrigin(next.URL.String(), target) {
			return errors.New("redirect to another origin")
		}
		return nil
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, providerError{msg: step + ": " + clip(err.Error(), 200)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, idpclient.MaxAnswer))
		return resp.Header, providerError{fmt.Sprintf("%s: HTTP %d", step, resp.StatusCode), resp.StatusCode}
	}
	dec := json.NewDecoder(io.LimitReader(resp.Body, idpclient.MaxAnswer))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return resp.Header, providerError{msg: step + ": answer is not the expected JSON"}
	}
	return resp.Header, nil
}
