package authflows

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// The account page lists the user's own sessions with IP and browser,
// marks this one, and shows no other user's.
func TestAccountPageListsOwnSessions(t *testing.T) {
	e := newTestEnv(t)
	e.CreateUser(t, "ann@example.com", testPassword)
	e.CreateUser(t, "bob@example.com", testPassword)
	other := e.Do(withUA(e.JSONRequest(http.MethodPost, "/auth/login", map[string]string{"email": "ann@example.com", "password": testPassword}), "Firefox/120 on a phone"))
	if other.StatusCode != http.StatusOK {
		t.Fatal(other.StatusCode)
	}
	e.Do(withUA(e.JSONRequest(http.MethodPost, "/auth/login", map[string]string{"email": "bob@example.com", "password": testPassword}), "Bob's browser"))
	mine := e.Login(t, "ann@example.com", testPassword)

	r := e.NewRequest(http.MethodGet, "/auth/account", nil)
	r.Header.Set("Accept", "text/html")
	page := e.Body(t, e.Do(r, mine))
	for _, want := range []string{"Firefox/120 on a phone", testClientIP, "(this browser)", "Sign out everywhere else", "Change your password"} {
		if !strings.Contains(page, want) {
			t.Errorf("account page lacks %q", want)
		}
	}
	if strings.Contains(page, "Bob&#39;s browser") || strings.Contains(page, "Bob's browser") {
		t.Error("account page shows another user's session")
	}
	if n := strings.Count(page, "<li>\n<span>"); n != 2 {
		t.Errorf("account page lists %d sessions, want 2", n)
	}
}

const testPassword = "correct horse battery staple"

func withUA(r *http.Request, ua string) *http.Request {
	r.Header.Set("User-Agent", ua)
	return r
}

// Sessions keep the client IP and at most 256 bytes of the user agent.
func TestSessionRecordsIPAndTruncatedUserAgent(t *testing.T) {
	e := newTestEnv(t)
	u := e.CreateUser(t, "ann@example.com", testPassword)
	long := strings.Repeat("é", 300) // 600 bytes
	resp := e.Do(withUA(e.JSONRequest(http.MethodPost, "/auth/login", map[string]string{"email": "ann@example.com", "password": testPassword}), long))
	if resp.StatusCode != http.StatusOK {
		t.Fatal(resp.StatusCode)
	}
	ss, err := e.Store.SessionsOfUser(t.Context(), u.ID)
	if err != nil || len(ss) != 1 {
		t.Fatalf("%d sessions, %v", len(ss), err)
	}
	if ss[0].IP != testClientIP {
		t.Errorf("session IP %q, want %q", ss[0].IP, testClientIP)
	}
	if len(ss[0].UserAgent) != 256 || ss[0].UserAgent != long[:256] {
		t.Errorf("user agent kept %d bytes, want the first 256", len(ss[0].UserAgent))
	}
}

// "Sign out everywhere else" deletes every other session and keeps this one.
func TestSignOutEverywhereElse(t *testing.T) {
	var trail bytes.Buffer
	e := newTestEnv(t, func(c *Config) { c.Audit = audit.New(&trail, nil, nil) })
	u := e.CreateUser(t, "ann@example.com", testPassword)
	b := e.CreateUser(t, "bob@example.com", testPassword)
	phone, laptop, mine := e.StartSession(t, u), e.StartSession(t, u), e.StartSession(t, u)
	bobs := e.StartSession(t, b)

	if resp := e.PostJSON("/auth/account/sessions/revoke-others", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a session: %d, want 401", resp.StatusCode)
	}
	resp := e.PostJSON("/auth/account/sessions/revoke-others", "", mine)
	var got struct {
		SessionsRevoked int `json:"sessions_revoked"`
	}
	e.DecodeJSON(t, resp, &got)
	if resp.StatusCode != http.StatusOK || got.SessionsRevoked != 2 {
		t.Fatalf("revoke-others: %d %+v", resp.StatusCode, got)
	}
	for name, c := range map[string]*http.Cookie{"phone": phone, "laptop": laptop} {
		if _, err := e.Store.Session(t.Context(), storage.HashSecret(c.Value)); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("%s session survived: %v", name, err)
		}
	}
	for name, c := range map[string]*http.Cookie{"this": mine, "bob's": bobs} {
		if _, err := e.Store.Session(t.Context(), storage.HashSecret(c.Value)); err != nil {
			t.Errorf("%s session gone: %v", name, err)
		}
	}
	if form := e.PostForm("/auth/account/sessions/revoke-others", url.Values{}, mine); form.StatusCode != http.StatusSeeOther || form.Header.Get("Location") != "/auth/account?done=signed_out" {
		t.Errorf("form: %d %q", form.StatusCode, form.Header.Get("Location"))
	}
	if !strings.Contains(trail.String(), `"event":"sessions_revoked"`) || !strings.Contains(trail.String(), u.ID) {
		t.Errorf("audit trail: %s", trail.String())
	}
}

// The password change needs the current password, applies the password
// rules, revokes every other session and gives this browser a new session.
func TestAccountPasswordChange(t *testing.T) {
	var trail bytes.Buffer
	e := newTestEnv(t, func(c *Config) { c.Audit = audit.New(&trail, nil, nil) })
	u := e.CreateUser(t, "ann@example.com", testPassword)
	other := e.StartSession(t, u)
	mine := e.Login(t, "ann@example.com", testPassword)
	const newPassword = "a brand new passphrase"

	for _, tc := range []struct {
		name    string
		body    map[string]string
		cookie  *http.Cookie
		status  int
		problem string
	}{
		{"no session", map[string]string{"current_password": testPassword, "password": newPassword}, nil, http.StatusUnauthorized, "unauthenticated"},
		{"wrong current", map[string]string{"current_password": "not it at all", "password": newPassword}, mine, http.StatusBadRequest, "invalid_credentials"},
		{"weak", map[string]string{"current_password": testPassword, "password": "short"}, mine, http.StatusBadRequest, "weak_password"},
		{"mismatch", map[string]string{"current_password": testPassword, "password": newPassword, "confirm": newPassword + "x"}, mine, http.StatusBadRequest, "password_mismatch"},
	} {
		resp := e.PostJSON("/auth/account/password", tc.body, tc.cookie)
		if code := e.ProblemCode(t, resp, tc.status); code != tc.problem {
			t.Errorf("%s: code %q, want %q", tc.name, code, tc.problem)
		}
	}
	// Nothing changed so far.
	if _, err := e.Store.Session(t.Context(), storage.HashSecret(other.Value)); err != nil {
		t.Fatalf("a refused change revoked a session: %v", err)
	}

	resp := e.PostJSON("/auth/account/password", map[string]string{"current_password": testPassword, "password": newPassword, "confirm": newPassword}, mine)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("change: %d %s", resp.StatusCode, e.Body(t, resp))
	}
	fresh := e.SessionCookie(resp)
	if fresh == nil || fresh.Value == "" || fresh.Value == mine.Value {
		t.Fatalf("no new session id after the change: %v", fresh)
	}
	for name, c := range map[string]*http.Cookie{"other": other, "old own": mine} {
		if _, err := e.Store.Session(t.Context(), storage.HashSecret(c.Value)); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("%s session survived the password change: %v", name, err)
		}
	}
	if _, err := e.Store.Session(t.Context(), storage.HashSecret(fresh.Value)); err != nil {
		t.Errorf("the new session is not stored: %v", err)
	}
	e.Login(t, "ann@example.com", newPassword)
	// The owner is told by mail, and the mail holds no password.
	jobs, err := e.Store.DueMail(t.Context(), e.Clock.Now(), 10)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("notice mail after the change: %+v %v", jobs, err)
	}
	notice, err := e.Handler.PrepareMail(t.Context(), jobs[0])
	if err != nil || notice.To != "ann@example.com" || !strings.Contains(notice.Text, "was changed") || strings.Contains(notice.Text, newPassword) {
		t.Errorf("notice mail after the change: %+v %v", notice, err)
	}
	// The browser that made the change stays signed in: the notice must not
	// claim that every device was signed out.
	for _, m := range []storage.Mail{notice} {
		for _, part := range []string{m.Text, m.HTML} {
			if !strings.Contains(part, "Every other device that was signed in has been signed out.") || strings.Contains(part, "Every device") {
				t.Errorf("the notice after an account-page change is not true of the browser kept signed in:\n%s", part)
			}
		}
	}
	if resp := e.PostJSON("/auth/login", map[string]string{"email": "ann@example.com", "password": testPassword}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("old password still signs in: %d", resp.StatusCode)
	}
	if !strings.Contains(trail.String(), `"event":"password_changed"`) || strings.Contains(trail.String(), newPassword) {
		t.Errorf("audit trail: %s", trail.String())
	}
	// A browser's form comes back to the page with a notice.
	form := e.PostForm("/auth/account/password", url.Values{"current_password": {newPassword}, "password": {testPassword + "!"}, "confirm": {testPassword + "!"}}, fresh)
	if form.StatusCode != http.StatusSeeOther || form.Header.Get("Location") != "/auth/account?done=password" {
		t.Errorf("form change: %d %q", form.StatusCode, form.Header.Get("Location"))
	}
}

// An invitation: the mail job mints a token of its own kind at delivery;
// GET renders the form without consuming it; POST sets the password, signs
// in, and the token works once. A reset token is no invitation.
func TestInviteFlow(t *testing.T) {
	var trail bytes.Buffer
	e := newTestEnv(t, func(c *Config) { c.Audit = audit.New(&trail, nil, nil); c.InviteTTL = 48 * time.Hour })
	u := e.CreateUser(t, "ivy@example.com", "")
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
	i := strings.Index(m.Text, testBaseURL+"/auth/invite?token=")
	if i < 0 || !strings.Contains(m.Text, "2 days") || m.To != "ivy@example.com" {
		t.Fatalf("invite mail to %s:\n%s", m.To, m.Text)
	}
	token := strings.Fields(m.Text[i+len(testBaseURL+"/auth/invite?token="):])[0]
	if len(token) != 43 {
		t.Fatalf("token %q is not 256 bits in base64url", token)
	}
	if e.ResetTokenValid(t, token) {
		t.Fatal("the invite token works as a reset token")
	}
	resetToken := e.IssueResetToken(t, u)
	if resp := e.PostJSON("/auth/invite", map[string]string{"token": resetToken, "password": "a fine long passphrase"}); e.ProblemCode(t, resp, http.StatusBadRequest) != "invalid_token" {
		t.Error("a reset token was accepted as an invitation")
	}

	for range 2 { // GET never consumes
		r := e.NewRequest(http.MethodGet, "/auth/invite?token="+token, nil)
		r.Header.Set("Accept", "text/html")
		page := e.Body(t, e.Do(r))
		if !strings.Contains(page, `name="token" value="`+token+`"`) {
			t.Fatalf("invite page has no form: %s", page)
		}
	}
	if resp := e.PostJSON("/auth/invite", map[string]string{"token": token, "password": "short"}); e.ProblemCode(t, resp, http.StatusBadRequest) != "weak_password" {
		t.Error("weak password accepted")
	}
	resp := e.PostJSON("/auth/invite", map[string]string{"token": token, "password": "a fine long passphrase"})
	if resp.StatusCode != http.StatusOK || e.SessionCookie(resp) == nil {
		t.Fatalf("accept: %d %s", resp.StatusCode, e.Body(t, resp))
	}
	if resp := e.PostJSON("/auth/invite", map[string]string{"token": token, "password": "another long passphrase"}); e.ProblemCode(t, resp, http.StatusBadRequest) != "invalid_token" {
		t.Error("an invitation worked twice")
	}
	e.Login(t, "ivy@example.com", "a fine long passphrase")

	// A browser's form: 303 to / with a session; a used link shows the
	// "link expired" page, not a form.
	w := e.CreateUser(t, "will@example.com", "")
	formToken := "form-invite-token"
	if err := e.Store.IssueInviteToken(t.Context(), storage.ResetToken{Hash: storage.HashSecret(formToken), UserID: w.ID,
		CreatedAt: e.Clock.Now(), ExpiresAt: e.Clock.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	form := url.Values{"token": {formToken}, "password": {"a fine long passphrase"}, "confirm": {"a fine long passphrase"}}
	if resp := e.PostForm("/auth/invite", form); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" || e.SessionCookie(resp) == nil {
		t.Errorf("form accept: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp := e.PostForm("/auth/invite", form); resp.StatusCode != http.StatusGone {
		t.Errorf("a used invitation's form post: %d", resp.StatusCode)
	} else if page := e.Body(t, resp); !strings.Contains(page, "This invitation has expired") || strings.Contains(page, `name="password"`) {
		t.Errorf("a used invitation's form post: %s", page)
	}

	if !strings.Contains(trail.String(), `"event":"invite_accepted"`) || strings.Contains(trail.String(), token) {
		t.Errorf("audit trail: %s", trail.String())
	}
	if strings.Contains(e.Logs.String(), token) {
		t.Error("the invite token is in the log")
	}

	// Expired.
	v := e.CreateUser(t, "vic@example.com", "")
	if err := e.Store.IssueInviteToken(t.Context(), storage.ResetToken{Hash: storage.HashSecret("expired-invite"), UserID: v.ID,
		CreatedAt: e.Clock.Now(), ExpiresAt: e.Clock.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	e.Clock.Advance(time.Hour)
	if resp := e.PostJSON("/auth/invite", map[string]string{"token": "expired-invite", "password": "a fine long passphrase"}); e.ProblemCode(t, resp, http.StatusBadRequest) != "invalid_token" {
		t.Error("an expired invitation was accepted")
	}
}

// "Everywhere else" includes a sign-in that was under way: one that checked
// the password before the click makes no session after it (CR1), while the
// browser that clicked keeps its own and may still link a provider.
func TestSignOutEverywhereElseEndsASignInInFlight(t *testing.T) {
	e := newTestEnv(t)
	u := e.CreateUser(t, "ann@example.com", testPassword)
	mine := e.StartSession(t, u)
	checked, err := e.Store.UserByID(t.Context(), u.ID) // an intruder's sign-in checked the password here
	if err != nil {
		t.Fatal(err)
	}
	if resp := e.PostJSON("/auth/account/sessions/revoke-others", "", mine); resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke-others: %d", resp.StatusCode)
	}
	now := e.Clock.Now()
	late := storage.Session{IDHash: storage.HashSecret("the intruder's"), UserID: u.ID, Epoch: checked.Epoch,
		CreatedAt: now, LastSeen: now, ExpiresAt: now.Add(time.Hour)}
	if err := e.Store.CreateSession(t.Context(), late); !errors.Is(err, storage.ErrCredentialsChanged) {
		t.Errorf("a sign-in checked before \"sign out everywhere else\" made its session after it: %v", err)
	}
	if resp := e.Get("/auth/me", mine); resp.StatusCode != http.StatusOK {
		t.Errorf("the browser that signed the others out: /auth/me %d", resp.StatusCode)
	}
	own, err := e.Store.Session(t.Context(), storage.HashSecret(mine.Value))
	if err != nil {
		t.Fatal(err)
	}
	id := storage.Identity{Provider: "github", Subject: "1", UserID: u.ID, CreatedAt: now}
	if err := e.Store.LinkIdentity(t.Context(), id, own.IDHash); err != nil {
		t.Errorf("the remaining session can no longer link: %v", err)
	}
}

// "Sign out everywhere else" that the store cannot carry out says so (503),
// never "signed out".
func TestSignOutEverywhereElseStoreFailure(t *testing.T) {
	e := newTestEnv(t, func(c *Config) {
		c.Store = faultyStore{Store: c.Store.(storage.Store), fail: failing("DeleteOtherSessions")}
	})
	u := e.CreateUser(t, "ann@example.com", testPassword)
	other, mine := e.StartSession(t, u), e.StartSession(t, u)
	if resp := e.PostJSON("/auth/account/sessions/revoke-others", "", mine); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("revoke-others on a failing store: %d, want 503", resp.StatusCode)
	}
	if _, err := e.Store.Session(t.Context(), storage.HashSecret(other.Value)); err != nil {
		t.Errorf("the other session: %v", err)
	}
}
