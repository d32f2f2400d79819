package authflows

import (
	"net/http"
	"net/url"
	"testing"
)

// Under required, the enrolment at /auth/2fa keeps one authenticator app
// secret for the whole step: after a mistyped code, and on loading the
// page again or asking POST /auth/2fa/totp, the secret the user already
// scanned is shown again and its code confirms.
func TestSecondFactorEnrolmentKeepsTheStepSecret(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.SecondFactor = SecondFactorRequired })
	e.CreateUser(t, "dee@example.com", testPassword)
	resp := e.PostForm("/auth/login", url.Values{"email": {"dee@example.com"}, "password": {testPassword}, "rd": {"/app"}})
	resp.Body.Close()
	step := cookieOf(resp, stepCookieName)
	if step == nil {
		t.Fatalf("form sign-in: %d, no step cookie", resp.StatusCode)
	}
	page := func() (id, secret string) {
		r := e.NewRequest(http.MethodGet, "/auth/2fa", nil)
		r.Header.Set("Accept", "text/html")
		body := e.Body(t, e.Do(r, step))
		return between(body, `name="id" value="`, `"`), between(body, `<code class="secret">`, `<`)
	}
	id, secret := page()
	if id == "" || secret == "" {
		t.Fatal("no enrolment on the page")
	}
	resp = e.PostForm("/auth/2fa/totp/confirm", url.Values{"id": {id}, "code": {"000000"}}, step)
	body := e.Body(t, resp)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a mistyped code: %d", resp.StatusCode)
	}
	if got := between(body, `<code class="secret">`, `<`); got != secret || between(body, `name="id" value="`, `"`) != id {
		t.Errorf("after a mistyped code the page shows secret %q, want the scanned %q again", got, secret)
	}
	if againID, again := page(); again != secret || againID != id {
		t.Errorf("the page again shows %q, want %q", again, secret)
	}
	var begun struct{ ID, Secret string }
	e.DecodeJSON(t, e.PostJSON("/auth/2fa/totp", struct{}{}, step), &begun)
	if begun.Secret != secret || begun.ID != id {
		t.Errorf("POST /auth/2fa/totp answered %+v, want the step's %s", begun, id)
	}
	resp = e.PostForm("/auth/2fa/totp/confirm", url.Values{"id": {id}, "code": {totpCode(t, secret, e.Clock.Now())}}, step)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || e.SessionCookie(resp) == nil {
		t.Errorf("the scanned secret's code: %d, want a session", resp.StatusCode)
	}
}
