//go:build integration

package deploy

import (
	"net/textproto"
	"strings"
	"testing"
)

// strippedHeaderNames are the names Gatehouse's own proxy removes from a
// client's request (proxy/headers.go: the identity and routing headers),
// with the names under its prefixes X-Auth-Request- (oauth2-proxy) and
// X-Webauth- (Grafana's auth proxy) that the nginx example lists.
var strippedHeaderNames = []string{
	"X-Forwarded-User", "X-Forwarded-Email", "Remote-User", "X-Remote-User",
	"X-Forwarded-Preferred-Username", "X-Forwarded-Groups", "X-Forwarded-Access-Token",
	"X-Gatehouse-Jwt-Assertion",
	"X-Auth-Request-User", "X-Auth-Request-Email", "X-Auth-Request-Groups",
	"X-Auth-Request-Preferred-Username", "X-Auth-Request-Access-Token", "X-Auth-Request-Redirect",
	"X-Webauth-User", "X-Webauth-Email", "X-Webauth-Name", "X-Webauth-Role", "X-Webauth-Groups",
	"X-Original-Url", "X-Original-Uri", "X-Rewrite-Url", "X-Forwarded-Uri",
}

// spellings returns every way of writing name with "-" or "_" at each of
// its separators: WSGI, Rack, PHP and CGI read them all as one variable.
func spellings(name string) []string {
	out := []string{""}
	for i, part := range strings.Split(name, "-") {
		if i == 0 {
			out[0] = part
			continue
		}
		var next []string
		for _, s := range out {
			next = append(next, s+"-"+part, s+"_"+part)
		}
		out = next
	}
	return out
}

// PX1, forward-auth: the Traefik example removes, before the forwardAuth,
// a client's copy of every header Gatehouse's own proxy strips that Traefik
// can name, in every spelling of "-" and "_" (Traefik deletes by canonical
// key, so the case of the letters needs no entry of its own). What it
// cannot name (other X-Auth-Request-* and X-Webauth-* headers) its comment
// says.
func TestTraefikExampleStripsEveryForgedIdentityHeader(t *testing.T) {
	conf, raw := readTraefikExample(t)
	h := conf.HTTP
	app, ok := h.Routers["app"]
	if !ok {
		t.Fatal("no router app")
	}
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
	for _, name := range strippedHeaderNames {
		for _, s := range spellings(name) {
			if !deleted[textproto.CanonicalMIMEHeaderKey(s)] {
				t.Errorf("a client's %s reaches the app: no headers middleware before forwardAuth removes it", s)
			}
		}
	}
	for _, prefix := range []string{"X-Auth-Request-*", "X-Webauth-*"} {
		if !strings.Contains(string(raw), prefix) {
			t.Errorf("the example's comment does not say that other %s headers reach the app", prefix)
		}
	}
}
