package proxy

import (
	"net/http"
	"strings"
	"testing"
)

// SS8 (outside attack): with an https --base-url the session cookie is
// named __Host-gatehouse_session (CK1), but browsers that signed in before
// (v1, or the same deployment on http or with --cookie-secure=false) still
// hold gatehouse_session=<session id>, Max-Age up to --session-ttl. Those
// sessions stay in the store, so that id is a live credential: sent as
// __Host-gatehouse_session by anyone who reads it, it signs them in. The
// proxy reads only the configured name, so it neither honours nor strips
// the old one: every proxied request hands the raw session id to the
// upstream (its logs, its error reports) until the cookie expires.
func TestLegacySessionCookieIsNotForwarded(t *testing.T) {
	const hostName = "__Host-" + DefaultCookieName
	e := newEnv(t, func(c *Config) { c.CookieName = hostName })
	current := e.signIn(sessionID)
	legacy := e.signIn("l3gacy-s3ss10n-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA") // made under the old name

	// The legacy id is live: under the current name it signs in.
	r := get("/app", "Cookie", hostName+"="+legacy)
	if res := e.serve(r); res.StatusCode != 200 {
		t.Fatalf("test premise: the legacy session does not authenticate: %d", res.StatusCode)
	}

	// A browser that signed in again carries both cookies.
	r = get("/app", "Cookie", DefaultCookieName+"="+legacy+"; "+hostName+"="+current+"; theme=dark")
	if res := e.serve(r); res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	if got := strings.Join(e.upstream.last(t).Header["Cookie"], "; "); strings.Contains(got, legacy) {
		t.Errorf("the upstream received a live session id in the old cookie name: Cookie %q", got)
	}
}

// Gatehouse's other cookies sent on every path (the __Host- OAuth
// transaction cookie) never reach the upstream either (SS8).
func TestOwnCookiesAreNotForwarded(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.OwnCookies = []string{"__Host-gatehouse_oauth"} })
	session := e.signIn(sessionID)
	r := get("/app", "Cookie", "__Host-gatehouse_oauth=browser-binding; "+DefaultCookieName+"="+session+"; theme=dark")
	if res := e.serve(r); res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	if got := strings.Join(e.upstream.last(t).Header["Cookie"], "; "); got != "theme=dark" {
		t.Errorf("the upstream received Cookie %q, want only theme=dark", got)
	}
}

// The upstream can neither set nor clear any of Gatehouse's cookies (SS8):
// the session cookie, its name without the __Host- prefix, and the other
// cookies Gatehouse sets; its own cookies pass.
func TestUpstreamCannotSetOwnCookies(t *testing.T) {
	const hostName = "__Host-" + DefaultCookieName
	e := newEnv(t, func(c *Config) {
		c.CookieName = hostName
		c.OwnCookies = []string{"__Host-gatehouse_oauth"}
	})
	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		for _, line := range []string{
			hostName + "=planted; Path=/; Secure", DefaultCookieName + "=planted",
			"__Host-gatehouse_oauth=; Max-Age=0", "theme=dark",
		} {
			w.Header().Add("Set-Cookie", line)
		}
	}
	res := e.serve(get("/app", "Cookie", hostName+"="+e.signIn(sessionID)))
	if got := res.Header.Values("Set-Cookie"); len(got) != 1 || got[0] != "theme=dark" {
		t.Fatalf("Set-Cookie %q, want only theme=dark", got)
	}
}
