//go:build integration

package deploy

import (
	"net/textproto"
	"strings"
	"testing"
)

// PX1, forward-auth (outside attack): Traefik's headers middleware deletes
// a customRequestHeaders name with an empty value by its canonical key
// only (req.Header.Del), and ForwardAuth's authResponseHeaders replace only
// that key too. A client's X_Forwarded_User (canonical key
// "X_forwarded_user") therefore reaches the app beside Gatehouse's
// X-Forwarded-User, and WSGI, Rack, PHP and CGI read both as
// HTTP_X_FORWARDED_USER (oauth2-proxy CVE-2025-64484): the example's
// promise "Client copies of the identity headers never reach the app"
// fails. The Caddy example removes both spellings for this reason, and
// nginx drops "_" names by default; the Traefik example must remove the
// "_" spelling of every identity header as well.
func TestTraefikExampleStripsUnderscoreSpellings(t *testing.T) {
	conf, _ := readTraefikExample(t)
	h := conf.HTTP
	app, ok := h.Routers["app"]
	if !ok {
		t.Fatal("no router app")
	}
	// Every name some headers middleware of the app's router deletes
	// before the forwardAuth, as Traefik compares them: canonical keys
	// ("_" is no word separator there: X_Forwarded_User is X_forwarded_user).
	deleted := map[string]bool{}
	for _, name := range app.Middlewares {
		m := h.Middlewares[name]
		if m.ForwardAuth != nil {
			break
		}
		if m.Headers != nil {
			for k, v := range m.Headers.CustomRequestHeaders {
				if v == "" {
					deleted[textproto.CanonicalMIMEHeaderKey(k)] = true
				}
			}
		}
	}
	for _, name := range identityHeaders {
		underscore := strings.ReplaceAll(name, "-", "_")
		if !deleted[textproto.CanonicalMIMEHeaderKey(underscore)] {
			t.Errorf("a client's %s reaches the app: no headers middleware before forwardAuth removes it", underscore)
		}
	}
}
