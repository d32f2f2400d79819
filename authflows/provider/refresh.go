package provider

import (
	"context"
	"errors"
	"net/http"

	"golang.org/x/oauth2"

	"github.com/gatehouse-auth/gatehouse/authflows/seal"
)

// ErrRefused: the provider refused the stored grant (a refresh token
// revoked or expired, an access token no longer accepted) or no longer
// knows the account. The sign-in no longer stands; any other failure of
// Reidentify (ErrCall) says nothing about it.
var ErrRefused = errors.New("provider refused the grant")

// refusedError is a refusal, described as providerError is.
type refusedError struct{ msg string }

func (e refusedError) Error() string { return e.msg }
func (e refusedError) Unwrap() error { return ErrRefused }

// CanReidentify reports whether Reidentify can work from t: a refresh
// token where the kind has ID tokens (google, oidc), an access token
// otherwise (github, whose tokens do not expire).
func (p *Provider) CanReidentify(t seal.Tokens) bool {
	if p.nonce {
		return t.Refresh != ""
	}
	return t.Access != ""
}

// Reidentify reads the account of a past sign-in again, from its kept
// tokens: google and oidc redeem the refresh token for a new ID token,
// verified as at sign-in (without a nonce: there is no flow); github calls
// its user API with the access token. It returns who the account is now
// and the tokens to keep from here (a provider may rotate the refresh
// token). The caller checks that Subject is still the sign-in's. Errors:
// one wrapping ErrRefused (end the session) or anything else (the provider
// could not be asked: change nothing).
func (p *Provider) Reidentify(ctx context.Context, t seal.Tokens) (Identity, seal.Tokens, error) {
	ctx, cancel := p.callContext(ctx)
	defer cancel()
	tok := &oauth2.Token{AccessToken: t.Access, RefreshToken: t.Refresh, Expiry: t.Expiry}
	if p.nonce {
		// Without an access token the token source refreshes at once.
		fresh, err := p.oauth.TokenSource(ctx, &oauth2.Token{RefreshToken: t.Refresh}).Token()
		if err != nil {
			return Identity{}, t, refreshError(err)
		}
		if raw, _ := fresh.Extra("id_token").(string); raw == "" {
			return Identity{}, t, providerError{msg: "refresh: the answer has no ID token"}
		}
		tok = fresh
	}
	id, err := p.id.identify(ctx, tok, idCheck{refreshed: true})
	var pe providerError
	if errors.As(err, &pe) && pe.status == http.StatusUnauthorized { // the token is revoked or its account gone
		return Identity{}, t, refusedError{pe.msg}
	}
	if err != nil {
		return Identity{}, t, err
	}
	id.Tokens = tokensOf(tok, t)
	return id, id.Tokens, nil
}

// refreshError sorts a failed refresh: invalid_grant (RFC 6749 5.2: the
// refresh token is invalid, expired or revoked) is a refusal; anything
// else (a 5xx, a timeout, our own client rejected) is a failed call.
func refreshError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
		return refusedError{"refresh: invalid_grant"}
	}
	return exchangeError(err)
}
