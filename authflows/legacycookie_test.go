package authflows

import (
	"errors"
	"net/http"
	"testing"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// SS4 and SS8 under a __Host- cookie name: a browser that signed in before
// the prefix (v1, or the deployment on http) still holds gatehouse_session
// with a live session id. Signing in again, or out, ends that session and
// expires that cookie too, as it does the browser's current one.
func TestSignInAndOutEndTheUnprefixedSession(t *testing.T) {
	for _, how := range []string{"sign-in", "sign-out"} {
		t.Run(how, func(t *testing.T) {
			e := newTestEnv(t, func(c *Config) { c.CookieName = "__Host-gatehouse_session"; c.CookieSecure = true })
			u := e.CreateUser(t, "ann@example.com", testPassword)
			legacy := e.StartSession(t, u)
			legacy.Name = "gatehouse_session" // made under the old name
			var resp *http.Response
			if how == "sign-in" {
				resp = e.PostJSON("/auth/login", map[string]string{"email": "ann@example.com", "password": testPassword}, legacy)
			} else {
				current := e.StartSession(t, u)
				resp = e.PostJSON("/auth/logout", "", legacy, current)
			}
			if resp.StatusCode >= 300 {
				t.Fatalf("%s: %d %s", how, resp.StatusCode, e.Body(t, resp))
			}
			if _, err := e.Store.Session(t.Context(), storage.HashSecret(legacy.Value)); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("after %s, the session of the unprefixed cookie still stands: %v", how, err)
			}
			expired := false
			for _, c := range resp.Cookies() {
				if c.Name == "gatehouse_session" && c.MaxAge < 0 && c.Path == "/" {
					expired = true
				}
			}
			if !expired {
				t.Errorf("after %s, the unprefixed cookie is not expired: %q", how, resp.Header["Set-Cookie"])
			}
		})
	}
}
