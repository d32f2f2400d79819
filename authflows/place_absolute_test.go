package authflows

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Forward-auth sends the sign-in page an absolute rd (the app's own host):
// it is kept, like a local one, on the forgot link, through forgot and the
// mailed link, to the sign-in page after the reset; a foreign one is not.
func TestAbsoluteRedirectKeptThroughReset(t *testing.T) {
	e := newTestEnv(t, func(c *Config) {
		c.BaseURL, _ = url.Parse("https://auth.example.com")
		c.CookieDomain = "example.com"
		c.AllowedRedirectHosts = []string{"app.example.com"}
	})
	u := e.CreateUser(t, aliceEmail, alicePassword)
	const rd = "https://app.example.com/dash?x=1"
	post := func(path string, form url.Values, cookies ...*http.Cookie) *http.Response {
		r := e.FormRequest(path, form)
		r.Host = "auth.example.com"
		r.Header.Set("Origin", "https://auth.example.com")
		return e.Do(r, cookies...)
	}

	page := e.Body(t, e.Get("/auth/login?rd="+url.QueryEscape(rd)))
	containsAll(t, "sign-in page", page, `href="/auth/forgot?rd=`+url.QueryEscape(rd)+`"`)
	page = e.Body(t, e.Get("/auth/forgot?rd="+url.QueryEscape(rd)))
	containsAll(t, "forgot page", page, `name="rd" value="`+rd+`"`)

	if c := cookieOf(post("/auth/forgot", url.Values{"email": {aliceEmail}, "rd": {"https://evil.example/x"}}), redirectCookie); c != nil {
		t.Errorf("a foreign absolute rd is kept: %+v", c)
	}
	resp := post("/auth/forgot", url.Values{"email": {aliceEmail}, "rd": {rd}})
	rdCookie := cookieOf(resp, redirectCookie)
	if resp.StatusCode != http.StatusSeeOther || rdCookie == nil {
		t.Fatalf("forgot: %d, rd cookie %+v", resp.StatusCode, rdCookie)
	}
	token := e.IssueResetToken(t, u)
	page = e.Body(t, e.Get("/auth/reset?token="+token, rdCookie))
	containsAll(t, "reset page", page, `<input type="hidden" name="rd" value="`+rd+`">`)

	const newPassword = "a fine new passphrase"
	resp = post("/auth/reset", url.Values{"token": {token}, "password": {newPassword}, "confirm": {newPassword}, "rd": {rd}}, rdCookie)
	want := "/auth/login?reset=1&rd=" + url.QueryEscape(rd)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
		t.Fatalf("reset: %d %q, want %q", resp.StatusCode, resp.Header.Get("Location"), want)
	}
	page = e.Body(t, e.Get(want))
	if !strings.Contains(page, `<input type="hidden" name="rd" value="`+rd+`">`) {
		t.Errorf("sign-in page after the reset lost rd:\n%s", page)
	}
}
