package authflows

import (
	_ "embed"
	"net/http"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// passkeyScript runs the WebAuthn ceremonies of the pages that offer
// passkeys; pages load it as a file (script-src 'self'), never inline.
//
//go:embed pages/passkey.js
var passkeyScript []byte

// servePasskeyScript answers GET /auth/assets/passkey.js.
func (h *Handler) servePasskeyScript(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	_, _ = w.Write(passkeyScript)
}

// factorPageCSP is the policy of the pages with a second factor: the
// others' (web.PageCSP) plus the QR code as a data: image, and the
// passkey script from this origin with its fetches to this origin.
const factorPageCSP = "default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// pageCSP is the Content-Security-Policy of the named page.
func pageCSP(name string) string {
	switch name {
	case "login", "account", "2fa", "factor":
		return factorPageCSP
	}
	return web.PageCSP
}
