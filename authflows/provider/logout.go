package provider

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"time"
)

// backchannelLogoutEvent is the events member of an OpenID Connect
// Back-Channel Logout token.
const backchannelLogoutEvent = "http://schemas.openid.net/event/backchannel-logout"

// maxLogoutTokenSkew is how far in the future a logout token's iat may be.
const maxLogoutTokenSkew = 5 * time.Minute

// LogoutToken is a verified OpenID Connect Back-Channel Logout token: whom
// to sign out. Subject is spelled as Identity.Subject ("ISSUER#SUB"), empty
// when the token names only a sid.
type LogoutToken struct {
	Subject string
	SID     string
	// ID is the jti: the caller accepts each once, until Expiry.
	ID     string
	Expiry time.Time
}

// ErrNoBackchannelLogout: the provider is not an OpenID Provider whose
// logout tokens Gatehouse can verify.
var ErrNoBackchannelLogout = errors.New("provider has no back-channel logout")

// logoutVerifier is the kind (oidc) whose logout tokens can be verified.
type logoutVerifier interface {
	verifyLogout(ctx context.Context, raw string) (LogoutToken, error)
}

// VerifyLogoutToken checks a logout token as an ID token is checked (the
// provider's signature, iss, aud, azp, exp) and then as OpenID Connect
// Back-Channel Logout 1.0 says: iat present and not in the future, the
// back-channel logout event, no nonce, a jti, and a sub or a sid. Errors:
// IDTokenError (refuse the request), ErrNoBackchannelLogout.
func (p *Provider) VerifyLogoutToken(ctx context.Context, raw string) (LogoutToken, error) {
	v, ok := p.id.(logoutVerifier)
	if !ok {
		return LogoutToken{}, ErrNoBackchannelLogout
	}
	ctx, cancel := p.callContext(ctx) // a key set fetch, at most
	defer cancel()
	return v.verifyLogout(ctx, raw)
}

func (o *oidcIdentifier) verifyLogout(ctx context.Context, raw string) (LogoutToken, error) {
	v := o.verify
	if raw == "" {
		return LogoutToken{}, IDTokenError{"logout token missing"}
	}
	tok, err := v.verifier.Verify(ctx, raw)
	if err != nil {
		return LogoutToken{}, IDTokenError{clip(err.Error(), 200)}
	}
	now := v.now()
	if !now.Before(tok.Expiry) {
		return LogoutToken{}, IDTokenError{"expired"}
	}
	var c struct {
		AuthorizedParty string                     `json:"azp"`
		IssuedAt        *int64                     `json:"iat"`
		ID              string                     `json:"jti"`
		SID             string                     `json:"sid"`
		Events          map[string]json.RawMessage `json:"events"`
		Nonce           json.RawMessage            `json:"nonce"` // non-nil when present, null too
	}
	if err := tok.Claims(&c); err != nil {
		return LogoutToken{}, IDTokenError{"claims are not the expected JSON"}
	}
	event, hasEvent := c.Events[backchannelLogoutEvent]
	var eventObject map[string]json.RawMessage
	switch {
	case (len(tok.Audience) > 1 || c.AuthorizedParty != "") && c.AuthorizedParty != v.clientID:
		return LogoutToken{}, IDTokenError{"authorized party is not this client"}
	case c.IssuedAt == nil:
		return LogoutToken{}, IDTokenError{"iat missing"}
	case time.Unix(*c.IssuedAt, 0).After(now.Add(maxLogoutTokenSkew)):
		return LogoutToken{}, IDTokenError{"issued in the future"}
	case !hasEvent || json.Unmarshal(event, &eventObject) != nil || eventObject == nil:
		return LogoutToken{}, IDTokenError{"not a back-channel logout event"}
	case c.Nonce != nil:
		return LogoutToken{}, IDTokenError{"a logout token carries no nonce"}
	case c.ID == "":
		return LogoutToken{}, IDTokenError{"jti missing"}
	case tok.Subject == "" && c.SID == "":
		return LogoutToken{}, IDTokenError{"neither sub nor sid"}
	}
	out := LogoutToken{SID: c.SID, ID: c.ID, Expiry: tok.Expiry}
	if tok.Subject != "" {
		out.Subject = tok.Issuer + "#" + tok.Subject
	}
	return out, nil
}

// EndSessionURL is where a browser signing out of Gatehouse continues to
// sign out at the OpenID Provider (RP-Initiated Logout 1.0): its
// end_session_endpoint with id_token_hint (when the sign-in's ID token was
// kept), client_id and post_logout_redirect_uri. false when the provider
// has no such endpoint (or is not an OpenID Provider).
func (p *Provider) EndSessionURL(idTokenHint, postLogoutRedirect string) (string, bool) {
	o, ok := p.id.(*oidcIdentifier)
	if !ok || o.endSession == "" {
		return "", false
	}
	u, err := url.Parse(o.endSession)
	if err != nil {
		return "", false
	}
	q := u.Query()
	if idTokenHint != "" {
		q.Set("id_token_hint", idTokenHint)
	}
	q.Set("client_id", o.clientID)
	q.Set("post_logout_redirect_uri", postLogoutRedirect)
	u.RawQuery = q.Encode()
	return u.String(), true
}
