package authflows

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
)

// cookieOf returns the Set-Cookie of name in resp, or nil.
func cookieOf(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func containsAll(t *testing.T, what, body string, want ...string) {
	t.Helper()
	for _, s := range want {
		if !strings.Contains(body, s) {
			t.Errorf("%s lacks %q:\n%s", what, s, body)
		}
	}
}

// A used, expired or unknown reset link answers 410 with its own page on GET
// and on a form POST; a JSON POST keeps 400 invalid_token.
func TestResetLinkExpiredAnswers410(t *testing.T) {
	e := newTestEnv(t)
	u := e.CreateUser(t, aliceEmail, alicePassword)
	expired := e.IssueResetToken(t, u)
	e.Clock.Advance(31 * time.Minute) // past the 30-minute lifetime

	for name, token := range map[string]string{"expired": expired, "unknown": "bogus", "missing": ""} {
		resp := e.Get("/auth/reset?token=" + token)
		body := e.Body(t, resp)
		if resp.StatusCode != http.StatusGone {
			t.Errorf("%s GET: %d, want 410", name, resp.StatusCode)
		}
		containsAll(t, name+" GET page", body, "<title>This reset link has expired", `<a class="button" href="/auth/forgot">Ask for a new link</a>`, "invalid_token")
		if strings.Contains(body, `name="password"`) {
			t.Errorf("%s GET shows a password form", name)
		}

		resp = e.PostForm("/auth/reset", url.Values{"token": {token}, "password": {"a fine new passphrase"}, "confirm": {"a fine new passphrase"}})
		if body := e.Body(t, resp); resp.StatusCode != http.StatusGone || !strings.Contains(body, "This reset link has expired") {
			t.Errorf("%s form POST: %d %s", name, resp.StatusCode, body)
		}
		resp = e.PostJSON("/auth/reset", map[string]string{"token": token, "password": "a fine new passphrase"})
		if code := e.ProblemCode(t, resp, http.StatusBadRequest); code != "invalid_token" {
			t.Errorf("%s JSON POST: code %q", name, code)
		}
	}
}

// The link-expired page is one template for every kind of mailed link.
func TestLinkExpiredKinds(t *testing.T) {
	e := newTestEnv(t)
	for kind, want := range map[string][]string{
		"reset":  {"This reset link has expired", `href="/auth/forgot?rd=%2Fapp"`, `href="/auth/login?rd=%2Fapp"`},
		"invite": {"This invitation has expired", "Ask the person who invited you", `href="/auth/login?rd=%2Fapp"`},
	} {
		w := httptest.NewRecorder()
		e.Handler.renderLinkExpired(w, e.NewRequest(http.MethodGet, "/x", nil), kind, "/app")
		if w.Code != http.StatusGone {
			t.Errorf("%s: status %d", kind, w.Code)
		}
		containsAll(t, kind+" page", w.Body.String(), want...)
	}
}

// rd survives forgot and reset in the same browser; the reset form names
// the account for password managers; the sign-in page after the reset has
// the email filled in and still carries rd.
func TestResetKeepsPlaceAndEmail(t *testing.T) {
	e := newTestEnv(t)
	u := e.CreateUser(t, aliceEmail, alicePassword)
	const rd = "/reports/2026?sort=desc"

	page := e.Body(t, e.Get("/auth/login?rd="+url.QueryEscape(rd)))
	containsAll(t, "sign-in page", page, `href="/auth/forgot?rd=`+url.QueryEscape(rd)+`"`)
	page = e.Body(t, e.Get("/auth/forgot?rd="+url.QueryEscape(rd)))
	containsAll(t, "forgot page", page, `<input type="hidden" name="rd" value="/reports/2026?sort=desc">`)

	resp := e.PostForm("/auth/forgot", url.Values{"email": {aliceEmail}, "rd": {rd}})
	rdCookie := cookieOf(resp, redirectCookie)
	if resp.StatusCode != http.StatusSeeOther || rdCookie == nil || !rdCookie.HttpOnly || rdCookie.Path != "/auth/" {
		t.Fatalf("forgot: %d, rd cookie %+v", resp.StatusCode, rdCookie)
	}
	// The answer is the same for an unknown address (FG1).
	other := e.PostForm("/auth/forgot", url.Values{"email": {"nobody@example.com"}, "rd": {rd}})
	if other.Header.Get("Set-Cookie") != resp.Header.Get("Set-Cookie") || other.Header.Get("Location") != resp.Header.Get("Location") {
		t.Errorf("forgot answers differ: %v vs %v", other.Header, resp.Header)
	}
	// A foreign rd is not kept.
	if c := cookieOf(e.PostForm("/auth/forgot", url.Values{"email": {aliceEmail}, "rd": {"//evil.example"}}), redirectCookie); c != nil {
		t.Errorf("foreign rd kept in a cookie: %+v", c)
	}

	token := e.IssueResetToken(t, u)
	page = e.Body(t, e.Get("/auth/reset?token="+token, rdCookie))
	containsAll(t, "reset page", page,
		`<input type="hidden" name="rd" value="/reports/2026?sort=desc">`,
		`<input type="text" name="username" value="alice@example.com" autocomplete="username" hidden>`)

	const newPassword = "a fine new passphrase"
	resp = e.PostForm("/auth/reset", url.Values{"token": {token}, "password": {newPassword}, "confirm": {newPassword}, "rd": {rd}}, rdCookie)
	want := "/auth/login?reset=1&rd=" + url.QueryEscape(rd)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
		t.Fatalf("reset: %d %q, want 303 %q", resp.StatusCode, resp.Header.Get("Location"), want)
	}
	hint := cookieOf(resp, emailHintCookie)
	if hint == nil || !hint.HttpOnly || hint.Path != "/auth/login" || hint.MaxAge <= 0 || hint.MaxAge > 600 {
		t.Fatalf("email hint cookie %+v", hint)
	}
	if c := cookieOf(resp, redirectCookie); c == nil || c.MaxAge >= 0 {
		t.Errorf("rd cookie not expired after the reset: %+v", c)
	}
	page = e.Body(t, e.Get(want, hint))
	containsAll(t, "sign-in page after reset", page, "Your password was changed, sign in.",
		`value="alice@example.com"`, `<input type="hidden" name="rd" value="/reports/2026?sort=desc">`)

	// Signing in drops the hint.
	login := e.PostForm("/auth/login", url.Values{"email": {aliceEmail}, "password": {newPassword}, "rd": {rd}}, hint)
	if login.StatusCode != http.StatusSeeOther || login.Header.Get("Location") != rd {
		t.Fatalf("sign-in: %d %q", login.StatusCode, login.Header.Get("Location"))
	}
	if c := cookieOf(login, emailHintCookie); c == nil || c.MaxAge >= 0 {
		t.Errorf("hint not dropped at sign-in: %+v", c)
	}
}

// POST /auth/logout: a form goes to a local rd (else /auth/login, which then
// says "signed out"); every answer sends Clear-Site-Data: "cache"; the
// sign-in page a signed-out browser sees loads a resource that clears the
// cache too.
func TestLogoutRedirectAndClearSiteData(t *testing.T) {
	e := newTestEnv(t)
	e.CreateUser(t, aliceEmail, alicePassword)
	cases := []struct{ rd, want string }{
		{"/app/page?x=1", "/app/page?x=1"},
		{"", "/auth/login"},
		{"//evil.example/x", "/auth/login"},
		{"https://evil.example/", "/auth/login"},
	}
	for _, tc := range cases {
		cookie := e.Login(t, aliceEmail, alicePassword)
		form := url.Values{}
		if tc.rd != "" {
			form.Set("rd", tc.rd)
		}
		resp := e.PostForm("/auth/logout", form, cookie)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != tc.want {
			t.Errorf("rd %q: %d %q, want 303 %q", tc.rd, resp.StatusCode, resp.Header.Get("Location"), tc.want)
		}
		if got := resp.Header.Get("Clear-Site-Data"); got != `"cache"` {
			t.Errorf("rd %q: Clear-Site-Data %q", tc.rd, got)
		}
		if code := e.ProblemCode(t, e.Get("/auth/me", cookie), http.StatusUnauthorized); code != "unauthenticated" {
			t.Errorf("session alive after logout: %q", code)
		}
	}
	cookie := e.Login(t, aliceEmail, alicePassword)
	resp := e.PostJSON("/auth/logout", map[string]string{}, cookie)
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Clear-Site-Data") != `"cache"` {
		t.Errorf("JSON logout: %d, Clear-Site-Data %q", resp.StatusCode, resp.Header.Get("Clear-Site-Data"))
	}

	resp = e.PostForm("/auth/logout", url.Values{}, e.Login(t, aliceEmail, alicePassword))
	marker := cookieOf(resp, signedOutCookie)
	page := e.Body(t, e.Get("/auth/login", marker))
	containsAll(t, "sign-in page after sign-out", page, "You are signed out.", `<link rel="stylesheet" href="`+clearCacheAsset+`">`)
	if strings.Contains(e.Body(t, e.Get("/auth/login")), "You are signed out.") {
		t.Error("the signed-out notice shows without a sign-out")
	}
	css := e.Get(clearCacheAsset)
	if css.StatusCode != http.StatusOK || css.Header.Get("Clear-Site-Data") != `"cache"` || !strings.HasPrefix(css.Header.Get("Content-Type"), "text/css") {
		t.Errorf("%s: %d %v", clearCacheAsset, css.StatusCode, css.Header)
	}

	// The signed-in page's "sign out" (rd back to the sign-in page): the
	// page it lands on says so and clears the cache too.
	cookie = e.Login(t, aliceEmail, alicePassword)
	rd := "/auth/login?notice=signed_out&rd=%2Fapp"
	resp = e.PostForm("/auth/logout", url.Values{"rd": {rd}}, cookie)
	if resp.Header.Get("Location") != rd {
		t.Fatalf("sign-out from the signed-in page: to %q", resp.Header.Get("Location"))
	}
	page = e.Body(t, e.Get(rd, cookieOf(resp, signedOutCookie)))
	containsAll(t, "sign-in page after the signed-in page's sign-out", page, "You are signed out.", clearCacheAsset, `name="password"`)
}

// /auth/login for a signed-in browser says who it is, with "continue" (to
// rd) and "sign out" (back to this page), and no form.
func TestLoginPageSignedIn(t *testing.T) {
	e := newTestEnv(t)
	e.CreateUser(t, aliceEmail, alicePassword)
	cookie := e.Login(t, aliceEmail, alicePassword)
	page := e.Body(t, e.Get("/auth/login?rd="+url.QueryEscape("/app?x=1"), cookie))
	containsAll(t, "signed-in page", page, "You are signed in", "Signed in as <strong>alice@example.com</strong>",
		`<a class="button" href="/app?x=1">Continue</a>`, `action="/auth/logout"`,
		`name="rd" value="/auth/login?notice=signed_out&amp;rd=%2Fapp%3Fx%3D1"`)
	if strings.Contains(page, `name="password"`) || strings.Contains(page, clearCacheAsset) {
		t.Errorf("signed-in page shows the form or clears the cache:\n%s", page)
	}
}

// A failed sign-in ties the error to the inputs.
func TestLoginErrorTiedToInputs(t *testing.T) {
	e := newTestEnv(t)
	e.CreateUser(t, aliceEmail, alicePassword)
	resp := e.PostForm("/auth/login", url.Values{"email": {aliceEmail}, "password": {"wrong password here"}, "rd": {"/app"}})
	page := e.Body(t, resp)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d", resp.StatusCode)
	}
	containsAll(t, "refused sign-in", page, `href="/auth/forgot?rd=%2Fapp"`, `value="alice@example.com"`, `id="form-error"`, `aria-invalid="true" aria-describedby="form-error"`, `role="alert"`)
	if strings.Count(page, `aria-describedby="form-error"`) != 2 {
		t.Errorf("both inputs should point at the error:\n%s", page)
	}
}

// Error pages say what happened and what to do, with the fixing action
// first and the code last.
func TestErrorPageHelps(t *testing.T) {
	e := newTestEnv(t)
	r := e.NewRequest(http.MethodGet, "/auth/nothing-here", nil)
	r.Header.Set("Accept", "text/html")
	resp := e.Do(r)
	page := e.Body(t, resp)
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("status %d", resp.StatusCode)
	}
	containsAll(t, "404 page", page, "<h1>Not found</h1>", "mistyped", `<a class="button" href="/">Go to the start</a>`, `<p class="muted code">Error 404 · not_found</p>`)
	if strings.Index(page, `class="button"`) > strings.Index(page, "not_found") {
		t.Error("the code comes before the action")
	}
}

// --templates-dir replaces a page by file name, --app-name shows in titles
// and mail subjects, and a broken or unknown file stops New naming it.
func TestTemplatesDirAndAppName(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("forgot_sent.html", `{{define "title"}}Mail is on its way{{end}}{{define "content"}}<h1>Look in your inbox, {{appName}} user</h1>{{end}}`)
	write("reset.subject.tmpl", `{{.Site}}: new password`)
	e := newTestEnv(t, func(c *Config) { c.TemplatesDir = dir; c.AppName = "Acme Reports" })
	page := e.Body(t, e.Get("/auth/forgot?sent=1"))
	containsAll(t, "overridden page", page, "<title>Mail is on its way · Acme Reports</title>", "Look in your inbox, Acme Reports user")
	page = e.Body(t, e.Get("/auth/login"))
	containsAll(t, "embedded page", page, "<title>Sign in · Acme Reports</title>", `<p class="app">Acme Reports</p>`)
	m, err := e.Handler.mails.render(mailReset, "a@example.com", mailData{Site: e.Handler.cfg.AppName, Link: "x", Lifetime: "y"}, e.Clock.Now())
	if err != nil || m.Subject != "Acme Reports: new password" {
		t.Errorf("mail subject %q, %v", m.Subject, err)
	}

	write("login.html", `{{define "title"}}x{{end}}{{define "content"}}{{.Nope`)
	if err := CheckTemplates(dir); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "login.html")) {
		t.Errorf("broken page: %v, want an error naming %s", err, filepath.Join(dir, "login.html"))
	}
	os.Remove(filepath.Join(dir, "login.html"))
	write("logn.html", `{{define "content"}}x{{end}}`)
	if err := CheckTemplates(dir); err == nil || !strings.Contains(err.Error(), "logn.html") {
		t.Errorf("unknown page file: %v", err)
	}
	os.Remove(filepath.Join(dir, "logn.html"))
	write("reset.text.tmpl", `{{.Link`)
	if err := CheckTemplates(dir); err == nil || !strings.Contains(err.Error(), "reset.text.tmpl") {
		t.Errorf("broken mail template: %v", err)
	}
}

// Unlink asks to confirm; the confirmed unlink and a link come back to the
// account page with a notice; the account page links back to the app.
func TestUnlinkConfirmAndNotices(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	u := e.newUser("ivy@example.com", true)
	b := e.newBrowser()
	b.signIn(u)
	e.github.SetNext(oauthtest.Account{Subject: "61", Email: "ivy.gh@example.com", EmailVerified: true})
	r := b.flow(linkedAccount{Name: "github"}.LinkURL())
	if r.status != http.StatusSeeOther || r.location() != "/auth/account?notice=linked" {
		t.Fatalf("link: %d to %q", r.status, r.location())
	}
	page := b.get("/auth/account?notice=linked&rd=" + url.QueryEscape("/app#top"))
	containsAll(t, "account page after link", page.body, "The account was linked.", `<a class="button" href="/app#top">Back to`)

	confirm := b.get("/auth/unlink/github")
	if confirm.status != http.StatusOK {
		t.Fatalf("confirm page: %d", confirm.status)
	}
	containsAll(t, "confirm page", confirm.body, "<h1>Unlink GitHub?</h1>", "ivy.gh@example.com", `<form method="post" action="/auth/unlink/github">`, `href="/auth/account">Keep it linked`)
	if ids := e.identities(u.ID); len(ids) != 1 {
		t.Fatalf("the confirm page unlinked: %+v", ids)
	}
	if a := b.postForm("/auth/unlink/github"); a.status != http.StatusSeeOther || a.location() != "/auth/account?notice=unlinked" {
		t.Fatalf("unlink: %d to %q", a.status, a.location())
	}
	containsAll(t, "account page after unlink", b.get("/auth/account?notice=unlinked").body, "The account was unlinked.")
	if nl := b.get("/auth/unlink/github"); nl.status != http.StatusNotFound {
		t.Errorf("confirm page of an unlinked provider: %d", nl.status)
	}
	// An unknown notice shows nothing of the query.
	if p := b.get("/auth/account?notice=%3Cb%3Ehi").body; strings.Contains(p, "hi") && strings.Contains(p, `class="notice"`) {
		t.Errorf("unknown notice shown:\n%s", p)
	}
}

// A sign-in cancelled at the provider offers to try again with the same rd;
// a cancelled link leads back to the account page.
func TestOAuthFailureRetriesWithRedirect(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	b := e.newBrowser()
	b.accept = "text/html"
	e.github.DenyNext("access_denied")
	r := b.flow("/auth/login/github?rd=" + url.QueryEscape("/reports?x=1"))
	containsAll(t, "cancelled sign-in page", r.body, "<h1>Sign-in cancelled</h1>", `href="/auth/login?rd=%2Freports%3Fx%3D1"`)

	u := e.newUser("lee@example.com", true)
	b.signIn(u)
	e.github.DenyNext("access_denied")
	r = b.flow("/auth/link/github?rd=" + url.QueryEscape("/auth/account"))
	containsAll(t, "cancelled link page", r.body, `<a class="button" href="/auth/account">`)
}
