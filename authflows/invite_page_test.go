package authflows

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// The invitation gets the pages' treatment: the mail's subject names the
// app; the form carries the account in a hidden username field; an error
// is tied to the password inputs; a used, expired or unknown link is the
// 410 page of an invitation, on GET and on a form POST.
func TestInvitePages(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.AppName = "Acme Reports" })
	u := e.CreateUser(t, "will@example.com", "")
	if err := e.Store.QueueInviteMail(t.Context(), u.ID, e.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	jobs, err := e.Store.DueMail(t.Context(), e.Clock.Now(), 10)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs %v %v", jobs, err)
	}
	m, err := e.Handler.PrepareMail(t.Context(), jobs[0])
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != "You are invited to Acme Reports" {
		t.Errorf("invite subject %q, want the app name", m.Subject)
	}

	const token = "page-invite-token"
	if err := e.Store.IssueInviteToken(t.Context(), storage.ResetToken{Hash: storage.HashSecret(token), UserID: u.ID,
		CreatedAt: e.Clock.Now(), ExpiresAt: e.Clock.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	get := func(path string) (*http.Response, string) {
		r := e.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("Accept", "text/html")
		resp := e.Do(r)
		return resp, e.Body(t, resp)
	}
	resp, page := get("/auth/invite?token=" + token)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("invite page: %d, Referrer-Policy %q", resp.StatusCode, resp.Header.Get("Referrer-Policy"))
	}
	containsAll(t, "invite page", page, "Welcome to Acme Reports",
		`<input type="text" name="username" value="will@example.com" autocomplete="username" hidden>`,
		`name="token" value="`+token+`"`)
	if strings.Contains(page, `aria-invalid`) {
		t.Error("a fresh invite form marks its inputs invalid")
	}

	for _, path := range []string{"/auth/invite", "/auth/invite?token=unknown"} {
		resp, page := get(path)
		if resp.StatusCode != http.StatusGone {
			t.Errorf("%s: %d, want 410", path, resp.StatusCode)
		}
		containsAll(t, path, page, "This invitation has expired", "Ask the person who invited you", "Error 410")
		if strings.Contains(page, `name="password"`) {
			t.Errorf("%s shows a form", path)
		}
	}

	refused := e.PostForm("/auth/invite", url.Values{"token": {token}, "password": {"a fine long passphrase"}, "confirm": {"another long passphrase"}})
	page = e.Body(t, refused)
	if refused.StatusCode != http.StatusBadRequest {
		t.Errorf("mismatch: %d", refused.StatusCode)
	}
	containsAll(t, "invite form after a mismatch", page,
		`<p class="error" role="alert" id="password-error">The two passwords differ.</p>`,
		`aria-describedby="password-error password-rules" aria-invalid="true"`,
		`value="will@example.com" autocomplete="username"`)

	if resp := e.PostForm("/auth/invite", url.Values{"token": {token}, "password": {"a fine long passphrase"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("accept: %d", resp.StatusCode)
	}
	resp, page = get("/auth/invite?token=" + token)
	if resp.StatusCode != http.StatusGone || !strings.Contains(page, "This invitation has expired") {
		t.Errorf("used invitation: %d %s", resp.StatusCode, page)
	}
}

// --app-name is context for the password rules wherever a password is
// chosen: a password made of the app's name is refused for an invitation
// and a password change, though it would pass without that name.
func TestAppNameIsPasswordContext(t *testing.T) {
	const name, chosen = "Zorblax Quintel", "zorblaxquintel7"
	plain := newTestEnv(t)
	if err := password.Check(password.Normalize(chosen), "will@example.com", 12, plain.Handler.appNames()...); err != nil {
		t.Fatalf("without the app name the password is refused already (%v): the test proves nothing", err)
	}

	e := newTestEnv(t, func(c *Config) { c.AppName = name })
	if got := e.Handler.appNames(); len(got) != 2 || got[0] != name {
		t.Errorf("appNames %q, want the app name and the host", got)
	}
	u := e.CreateUser(t, "will@example.com", "")
	if err := e.Store.IssueInviteToken(t.Context(), storage.ResetToken{Hash: storage.HashSecret("ctx-invite"), UserID: u.ID,
		CreatedAt: e.Clock.Now(), ExpiresAt: e.Clock.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if code := e.ProblemCode(t, e.PostJSON("/auth/invite", map[string]string{"token": "ctx-invite", "password": chosen}), http.StatusBadRequest); code != "weak_password" {
		t.Errorf("invitation with the app name as password: %q, want weak_password", code)
	}

	e.CreateUser(t, aliceEmail, alicePassword)
	cookie := e.Login(t, aliceEmail, alicePassword)
	resp := e.PostJSON("/auth/account/password", map[string]string{"current_password": alicePassword, "password": chosen}, cookie)
	if code := e.ProblemCode(t, resp, http.StatusBadRequest); code != "weak_password" {
		t.Errorf("password change to the app name: %q, want weak_password", code)
	}
}

// The account page's password form: a refusal is tied to the input it is
// about; the page after a change says so; "Back to" the app keeps rd.
func TestAccountPasswordFormErrors(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.AppName = "Acme Reports" })
	e.CreateUser(t, aliceEmail, alicePassword)
	cookie := e.Login(t, aliceEmail, alicePassword)
	const next = "another quite long passphrase"

	page := e.Body(t, e.PostForm("/auth/account/password", url.Values{"current_password": {"wrong password here"}, "password": {next}, "confirm": {next}}, cookie))
	containsAll(t, "wrong current password", page, `id="password-error">The current password is wrong.</p>`,
		`id="current_password" name="current_password" type="password" autocomplete="current-password" required aria-invalid="true" aria-describedby="password-error"`,
		`<input type="text" name="username" value="alice@example.com" autocomplete="username" hidden>`)
	if strings.Contains(page, `aria-describedby="password-error password-rules"`) {
		t.Error("the wrong current password marks the new password invalid")
	}

	page = e.Body(t, e.PostForm("/auth/account/password", url.Values{"current_password": {alicePassword}, "password": {next}, "confirm": {next + "!"}}, cookie))
	containsAll(t, "passwords that differ", page, `aria-describedby="password-error password-rules" aria-invalid="true"`)
	if strings.Contains(page, `required aria-invalid="true" aria-describedby="password-error">`+"\n"+`<label for="password">`) {
		t.Error("a mismatch marks the current password invalid")
	}

	resp := e.PostForm("/auth/account/password", url.Values{"current_password": {alicePassword}, "password": {next}, "confirm": {next}}, cookie)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("change: %d", resp.StatusCode)
	}
	fresh := e.SessionCookie(resp)
	page = e.Body(t, e.Get(resp.Header.Get("Location")+"&rd=%2Freports", fresh))
	containsAll(t, "account page after a change", page, `<p class="notice" role="status">Your password was changed. Every other device was signed out.</p>`,
		`<a class="button" href="/reports">Back to Acme Reports</a>`)
}
