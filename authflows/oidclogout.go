package authflows

import (
	"context"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// providerLogoutURL is where POST /auth/logout of s continues with
// --oidc-logout: the OpenID Provider's end_session_endpoint, with the
// sign-in's ID token as id_token_hint (when it was kept: --token-key-file)
// and {base-url}/auth/login to come back to. "" for any other session, or
// a provider without the endpoint. Called before the session is deleted
// (its grant goes with it); a grant that cannot be read leaves out the hint.
func (h *core) providerLogoutURL(ctx context.Context, s storage.Session) string {
	if !h.cfg.OIDCLogout || s.Method != "oidc" {
		return ""
	}
	p, ok := h.providers["oidc"]
	if !ok {
		return ""
	}
	hint := ""
	if g, err := h.grantOf(ctx, s); err != nil {
		h.log.WarnContext(ctx, "oidc logout: grant not read, no id_token_hint", "err", err)
	} else if g != nil && g.Tokens != nil {
		if t, err := h.openTokens(*g); err == nil {
			hint = t.IDToken
		}
	}
	u, ok := p.EndSessionURL(hint, h.cfg.BaseURL.JoinPath("/auth/login").String())
	if !ok {
		return ""
	}
	return u
}
