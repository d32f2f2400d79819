package authflows

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// totpCode is the code an authenticator app shows at t for the secret the
// enrolment showed.
func totpCode(t testing.TB, secret string, at time.Time) string {
	t.Helper()
	code, err := totp.GenerateCode(secret, at)
	if err != nil {
		t.Fatalf("totp code: %v", err)
	}
	return code
}

// enrolTOTP adds an authenticator app to the session's user through the
// account endpoints and returns its secret and the recovery codes shown.
// The clock moves on 30 s, past the step the confirmation spent.
func (e *testEnv) enrolTOTP(t testing.TB, session *http.Cookie) (string, []string) {
	t.Helper()
	resp := e.PostJSON("/auth/account/totp", map[string]string{"name": "Phone"}, session)
	var begun struct{ ID, Secret, OTPAuthURL string }
	e.DecodeJSON(t, resp, &begun)
	if resp.StatusCode != http.StatusOK || begun.ID == "" || begun.Secret == "" {
		t.Fatalf("begin totp: %d %+v", resp.StatusCode, begun)
	}
	resp = e.PostJSON("/auth/account/totp/confirm", map[string]string{"id": begun.ID, "code": totpCode(t, begun.Secret, e.Clock.Now())}, session)
	var confirmed struct {
		RecoveryCodes []string `json:"recovery_codes"`
	}
	e.DecodeJSON(t, resp, &confirmed)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("confirm totp: %d", resp.StatusCode)
	}
	e.Clock.Advance(30 * time.Second)
	return begun.Secret, confirmed.RecoveryCodes
}

// passwordStep signs in with a password as JSON for a user with a second
// factor: it requires 200 {"second_factor_required":true}, no session
// cookie, and returns the step cookie and the methods.
func (e *testEnv) passwordStep(t testing.TB, email, password string, cookies ...*http.Cookie) (*http.Cookie, []string) {
	t.Helper()
	resp := e.PostJSON("/auth/login", map[string]string{"email": email, "password": password}, cookies...)
	var got struct {
		Required bool     `json:"second_factor_required"`
		Methods  []string `json:"methods"`
	}
	e.DecodeJSON(t, resp, &got)
	if resp.StatusCode != http.StatusOK || !got.Required {
		t.Fatalf("password sign-in: %d %+v, want the second-factor step", resp.StatusCode, got)
	}
	if c := e.SessionCookie(resp); c != nil {
		t.Fatalf("password sign-in of a user with a second factor set a session cookie %+v", c)
	}
	step := cookieOf(resp, stepCookieName)
	if step == nil || step.Value == "" || !step.HttpOnly || step.Path != "/auth/" || step.MaxAge != 300 {
		t.Fatalf("step cookie %+v", step)
	}
	return step, got.Methods
}

// enrolledUser is a user with a password and an authenticator app; the
// session used to enrol is signed out.
func (e *testEnv) enrolledUser(t testing.TB, email string) (storage.User, string, []string) {
	t.Helper()
	u := e.CreateUser(t, email, testPassword)
	session := e.Login(t, email, testPassword)
	secret, codes := e.enrolTOTP(t, session)
	if len(codes) != 10 {
		t.Fatalf("%d recovery codes at the first enrolment, want 10", len(codes))
	}
	return u, secret, codes
}

// sessionOf is the stored session of a cookie.
func (e *testEnv) sessionOf(t testing.TB, c *http.Cookie) storage.Session {
	t.Helper()
	s, err := e.Store.Session(t.Context(), storage.HashSecret(c.Value))
	if err != nil {
		t.Fatalf("session of the cookie: %v", err)
	}
	return s
}

// MF1: a password sign-in of a user with an authenticator app makes no session:
// the step cookie, then the code at POST /auth/2fa makes a new session
// whose amr lists pwd, otp and mfa. The step is single use.
func TestSecondFactorPasswordSignInJSON(t *testing.T) {
	e := newTestEnv(t)
	u, secret, _ := e.enrolledUser(t, "ann@example.com")

	step, methods := e.passwordStep(t, "ann@example.com", testPassword)
	if !slices.Equal(methods, []string{"totp", "recovery_code"}) {
		t.Errorf("methods %v", methods)
	}
	if resp := e.Get("/auth/me", step); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/auth/me with only the step cookie: %d, want 401", resp.StatusCode)
	}
	// The step wants the factor the user has: no new one is enrolled through it.
	for _, path := range []string{"/auth/2fa/totp", "/auth/2fa/totp/confirm"} {
		if code := e.ProblemCode(t, e.PostJSON(path, map[string]string{"id": "x", "code": "123456"}, step), http.StatusConflict); code != "enrolled" {
			t.Errorf("%s for a user with a factor: %q", path, code)
		}
	}
	if code := e.ProblemCode(t, e.PostJSON("/auth/2fa", map[string]string{"code": "000000"}, step), http.StatusUnauthorized); code != "invalid_code" {
		t.Errorf("wrong code: %q", code)
	}
	if code := e.ProblemCode(t, e.PostJSON("/auth/2fa", map[string]string{"code": "12ab"}), http.StatusUnauthorized); code != "step_expired" {
		t.Errorf("no step cookie: %q", code)
	}
	resp := e.PostJSON("/auth/2fa", map[string]string{"code": totpCode(t, secret, e.Clock.Now())}, step)
	var got struct {
		User struct{ ID, Email string } `json:"user"`
	}
	e.DecodeJSON(t, resp, &got)
	if resp.StatusCode != http.StatusOK || got.User.ID != u.ID || got.User.Email != "ann@example.com" {
		t.Fatalf("POST /auth/2fa: %d %+v", resp.StatusCode, got)
	}
	session := e.SessionCookie(resp)
	if session == nil || session.Value == "" || session.Value == step.Value {
		t.Fatalf("session cookie %+v", session)
	}
	if c := cookieOf(resp, stepCookieName); c == nil || c.MaxAge >= 0 {
		t.Errorf("the step cookie was not expired: %+v", c)
	}
	if s := e.sessionOf(t, session); !slices.Equal(s.AMR(), []string{"pwd", "otp", "mfa"}) || s.CreatedAt != e.Clock.Now() {
		t.Errorf("session amr %v created %v", s.AMR(), s.CreatedAt)
	}
	// The step is used: replayed, even with the next valid code, it is over.
	e.Clock.Advance(30 * time.Second)
	if code := e.ProblemCode(t, e.PostJSON("/auth/2fa", map[string]string{"code": totpCode(t, secret, e.Clock.Now())}, step), http.StatusUnauthorized); code != "step_expired" {
		t.Errorf("replayed step: %q", code)
	}
}

// The step lives 5 minutes; the form flow goes through the /auth/2fa page.
func TestSecondFactorStepExpiresAndForm(t *testing.T) {
	e := newTestEnv(t)
	_, secret, _ := e.enrolledUser(t, "ann@example.com")

	step, _ := e.passwordStep(t, "ann@example.com", testPassword)
	e.Clock.Advance(5*time.Minute + time.Second)
	if code := e.ProblemCode(t, e.PostJSON("/auth/2fa", map[string]string{"code": totpCode(t, secret, e.Clock.Now())}, step), http.StatusUnauthorized); code != "step_expired" {
		t.Errorf("step older than 5 minutes: %q", code)
	}

	resp := e.PostForm("/auth/login", url.Values{"email": {"ann@example.com"}, "password": {testPassword}, "rd": {"/app/x"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/auth/2fa" || e.SessionCookie(resp) != nil {
		t.Fatalf("form sign-in: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	step = cookieOf(resp, stepCookieName)
	r := e.NewRequest(http.MethodGet, "/auth/2fa", nil)
	r.Header.Set("Accept", "text/html")
	page := e.Do(r, step)
	body := e.Body(t, page)
	if page.StatusCode != http.StatusOK || !strings.Contains(body, `autocomplete="one-time-code"`) || !strings.Contains(body, `name="recovery_code"`) {
		t.Fatalf("2fa page: %d\n%s", page.StatusCode, body)
	}
	if csp := page.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("2fa page CSP %q", csp)
	}
	wrong := e.PostForm("/auth/2fa", url.Values{"code": {"000000"}}, step)
	if wrong.StatusCode != http.StatusUnauthorized || !strings.Contains(e.Body(t, wrong), "Wrong or used code") {
		t.Errorf("wrong code in the form: %d", wrong.StatusCode)
	}
	resp = e.PostForm("/auth/2fa", url.Values{"code": {totpCode(t, secret, e.Clock.Now())}}, step)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/app/x" || e.SessionCookie(resp) == nil {
		t.Errorf("form 2fa: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// A code is accepted one time step either side of now, not two; each step
// once.
func TestSecondFactorTOTPWindow(t *testing.T) {
	e := newTestEnv(t)
	_, secret, _ := e.enrolledUser(t, "ann@example.com")
	e.Clock.Advance(5 * time.Minute) // well past the enrolment's step
	now := e.Clock.Now()
	for _, tc := range []struct {
		name string
		at   time.Time
		ok   bool
	}{
		{"two steps early", now.Add(-60 * time.Second), false},
		{"two steps late", now.Add(60 * time.Second), false},
		{"one step early", now.Add(-30 * time.Second), true},
		{"now", now, true},
		{"now again", now, false},
		{"one step late", now.Add(30 * time.Second), true},
	} {
		step, _ := e.passwordStep(t, "ann@example.com", testPassword)
		resp := e.PostJSON("/auth/2fa", map[string]string{"code": totpCode(t, secret, tc.at)}, step)
		if tc.ok && resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d, want 200", tc.name, resp.StatusCode)
		}
		if !tc.ok {
			if code := e.ProblemCode(t, resp, http.StatusUnauthorized); code != "invalid_code" {
				t.Errorf("%s: %q, want invalid_code", tc.name, code)
			}
		}
	}
	if got := e.Logs.Events("second_factor_failed"); len(got) != 3 {
		t.Errorf("%d second_factor_failed events, want 3", len(got))
	}
}

// MF2: five failed codes per account per 15 minutes, then 429 even for the
// right code; the owner's browser with its device cookie is not locked out.
func TestSecondFactorRateLimited(t *testing.T) {
	var trail bytes.Buffer
	e := newTestEnv(t, func(c *Config) { c.Audit = audit.New(&trail, nil, nil) })
	_, secret, _ := e.enrolledUser(t, "ann@example.com")
	// The owner's browser: a full sign-in earlier left its device cookie.
	ownerStep, _ := e.passwordStep(t, "ann@example.com", testPassword)
	resp := e.PostJSON("/auth/2fa", map[string]string{"code": totpCode(t, secret, e.Clock.Now())}, ownerStep)
	device := cookieOf(resp, deviceCookieName)
	if resp.StatusCode != http.StatusOK || device == nil {
		t.Fatalf("owner's sign-in: %d, device cookie %v", resp.StatusCode, device)
	}
	e.Clock.Advance(30 * time.Second)

	step, _ := e.passwordStep(t, "ann@example.com", testPassword)
	for i := range 5 {
		if code := e.ProblemCode(t, e.PostJSON("/auth/2fa", map[string]string{"code": "000000"}, step), http.StatusUnauthorized); code != "invalid_code" {
			t.Fatalf("attempt %d: %q", i+1, code)
		}
	}
	if code := e.ProblemCode(t, e.PostJSON("/auth/2fa", map[string]string{"code": totpCode(t, secret, e.Clock.Now())}, step), http.StatusTooManyRequests); code != "rate_limited" {
		t.Errorf("sixth attempt, with the right code: %q", code)
	}
	if n := strings.Count(trail.String(), `"event":"second_factor_failed"`); n != 5 {
		t.Errorf("%d second_factor_failed audit events, want 5", n)
	}
	ownerStep, _ = e.passwordStep(t, "ann@example.com", testPassword, device)
	if resp := e.PostJSON("/auth/2fa", map[string]string{"code": totpCode(t, secret, e.Clock.Now())}, ownerStep, device); resp.StatusCode != http.StatusOK {
		t.Errorf("the owner's browser with its device cookie: %d, want 200", resp.StatusCode)
	}
	e.Clock.Advance(15*time.Minute + 30*time.Second)
	step, _ = e.passwordStep(t, "ann@example.com", testPassword)
	if resp := e.PostJSON("/auth/2fa", map[string]string{"code": totpCode(t, secret, e.Clock.Now())}, step); resp.StatusCode != http.StatusOK {
		t.Errorf("after 15 minutes: %d, want 200", resp.StatusCode)
	}
}

// Each recovery code signs in once (amr rec); regenerating voids the old set.
func TestSecondFactorRecoveryCodes(t *testing.T) {
	e := newTestEnv(t)
	_, _, codes := e.enrolledUser(t, "ann@example.com")

	step, _ := e.passwordStep(t, "ann@example.com", testPassword)
	resp := e.PostJSON("/auth/2fa", map[string]string{"recovery_code": codes[0]}, step)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("recovery code: %d", resp.StatusCode)
	}
	session := e.SessionCookie(resp)
	if s := e.sessionOf(t, session); !slices.Equal(s.AMR(), []string{"pwd", "rec", "mfa"}) {
		t.Errorf("amr %v", s.AMR())
	}
	step, _ = e.passwordStep(t, "ann@example.com", testPassword)
	if code := e.ProblemCode(t, e.PostJSON("/auth/2fa", map[string]string{"recovery_code": codes[0]}, step), http.StatusUnauthorized); code != "invalid_code" {
		t.Errorf("a used recovery code: %q", code)
	}
	var list factorsAnswer
	e.DecodeJSON(t, e.Get("/auth/account/factors", session), &list)
	if list.RecoveryCodesLeft != 9 || len(list.Factors) != 1 || list.Factors[0].Type != "totp" || list.Factors[0].Name != "Phone" {
		t.Errorf("factors %+v", list)
	}

	resp = e.PostJSON("/auth/account/recovery-codes", "", session)
	var fresh struct {
		RecoveryCodes []string `json:"recovery_codes"`
	}
	e.DecodeJSON(t, resp, &fresh)
	if resp.StatusCode != http.StatusOK || len(fresh.RecoveryCodes) != 10 {
		t.Fatalf("regenerate: %d %d codes", resp.StatusCode, len(fresh.RecoveryCodes))
	}
	step, _ = e.passwordStep(t, "ann@example.com", testPassword)
	if code := e.ProblemCode(t, e.PostJSON("/auth/2fa", map[string]string{"recovery_code": codes[1]}, step), http.StatusUnauthorized); code != "invalid_code" {
		t.Errorf("an old recovery code after regenerating: %q", code)
	}
	if resp := e.PostJSON("/auth/2fa", map[string]string{"recovery_code": fresh.RecoveryCodes[1]}, step); resp.StatusCode != http.StatusOK {
		t.Errorf("a new recovery code: %d", resp.StatusCode)
	}
}

// Every JSON row of the account's factor endpoints, success and errors;
// MF3: with a sign-in older than 10 minutes each change is refused.
func TestSecondFactorAccountEndpoints(t *testing.T) {
	e := newTestEnv(t)
	u := e.CreateUser(t, "ann@example.com", testPassword)
	other := e.CreateUser(t, "bob@example.com", testPassword)
	session := e.Login(t, "ann@example.com", testPassword)

	for _, r := range []*http.Request{
		e.NewRequest(http.MethodGet, "/auth/account/factors", nil),
		e.JSONRequest(http.MethodPost, "/auth/account/totp", ""),
		e.JSONRequest(http.MethodPost, "/auth/account/totp/confirm", map[string]string{"id": "x", "code": "123456"}),
		e.JSONRequest(http.MethodDelete, "/auth/account/factors/x", ""),
		e.JSONRequest(http.MethodPost, "/auth/account/recovery-codes", ""),
	} {
		r.Header.Set("Accept", "application/json")
		if resp := e.Do(r); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s without a session: %d", r.Method, r.URL.Path, resp.StatusCode)
		}
	}
	var list factorsAnswer
	e.DecodeJSON(t, e.Get("/auth/account/factors", session), &list)
	if list.Factors == nil || len(list.Factors) != 0 || list.RecoveryCodesLeft != 0 {
		t.Errorf("no factors yet: %+v", list)
	}
	if code := e.ProblemCode(t, e.PostJSON("/auth/account/recovery-codes", "", session), http.StatusConflict); code != "no_second_factor" {
		t.Errorf("recovery codes without a factor: %q", code)
	}

	resp := e.PostJSON("/auth/account/totp", "", session)
	var begun struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
		URL    string `json:"otpauth_url"`
	}
	e.DecodeJSON(t, resp, &begun)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(begun.URL, "otpauth://totp/") || !strings.Contains(begun.URL, "secret="+begun.Secret) {
		t.Fatalf("begin: %d %+v", resp.StatusCode, begun)
	}
	e.DecodeJSON(t, e.Get("/auth/account/factors", session), &list)
	if len(list.Factors) != 0 {
		t.Errorf("a pending factor is listed: %+v", list)
	}
	if code := e.ProblemCode(t, e.PostJSON("/auth/account/totp/confirm", map[string]string{"id": begun.ID, "code": "000000"}, session), http.StatusBadRequest); code != "invalid_code" {
		t.Errorf("confirm with a wrong code: %q", code)
	}
	bobs := e.Login(t, "bob@example.com", testPassword)
	if code := e.ProblemCode(t, e.PostJSON("/auth/account/totp/confirm", map[string]string{"id": begun.ID, "code": totpCode(t, begun.Secret, e.Clock.Now())}, bobs), http.StatusBadRequest); code != "invalid_code" {
		t.Errorf("another user confirms the enrolment: %q", code)
	}
	resp = e.PostJSON("/auth/account/totp/confirm", map[string]string{"id": begun.ID, "code": totpCode(t, begun.Secret, e.Clock.Now())}, session)
	var confirmed map[string][]string
	e.DecodeJSON(t, resp, &confirmed)
	if resp.StatusCode != http.StatusOK || len(confirmed["recovery_codes"]) != 10 {
		t.Fatalf("confirm: %d %v", resp.StatusCode, confirmed)
	}
	// A second factor brings no new codes: {}.
	e.Clock.Advance(30 * time.Second)
	resp = e.PostJSON("/auth/account/totp", "", session)
	e.DecodeJSON(t, resp, &begun)
	resp = e.PostJSON("/auth/account/totp/confirm", map[string]string{"id": begun.ID, "code": totpCode(t, begun.Secret, e.Clock.Now())}, session)
	if body := e.Body(t, resp); resp.StatusCode != http.StatusOK || body != "{}\n" {
		t.Errorf("second factor's confirm: %d %q", resp.StatusCode, body)
	}
	e.DecodeJSON(t, e.Get("/auth/account/factors", session), &list)
	if len(list.Factors) != 2 || list.RecoveryCodesLeft != 10 || list.Factors[0].Created.IsZero() {
		t.Fatalf("factors %+v", list)
	}

	if code := e.ProblemCode(t, e.Do(e.JSONRequest(http.MethodDelete, "/auth/account/factors/"+list.Factors[0].ID, ""), bobs), http.StatusNotFound); code != "not_found" {
		t.Errorf("removing another user's factor: %q", code)
	}
	if code := e.ProblemCode(t, e.Do(e.JSONRequest(http.MethodDelete, "/auth/account/factors/nosuch", ""), session), http.StatusNotFound); code != "not_found" {
		t.Errorf("removing an unknown factor: %q", code)
	}
	if resp := e.Do(e.JSONRequest(http.MethodDelete, "/auth/account/factors/"+list.Factors[0].ID, ""), session); resp.StatusCode != http.StatusNoContent {
		t.Errorf("remove: %d", resp.StatusCode)
	}

	// Eleven minutes after the sign-in, every change asks to sign in again.
	e.Clock.Advance(11 * time.Minute)
	for _, r := range []*http.Request{
		e.JSONRequest(http.MethodPost, "/auth/account/totp", ""),
		e.JSONRequest(http.MethodDelete, "/auth/account/factors/"+list.Factors[1].ID, ""),
		e.JSONRequest(http.MethodPost, "/auth/account/recovery-codes", ""),
		e.JSONRequest(http.MethodPost, "/auth/account/password", map[string]string{"current_password": testPassword, "password": "another long passphrase"}),
		e.JSONRequest(http.MethodPost, "/auth/passkey/register/begin", ""),
	} {
		if code := e.ProblemCode(t, e.Do(r, session), http.StatusUnauthorized); code != "reauthentication_required" {
			t.Errorf("%s %s with an 11-minute-old sign-in: %q", r.Method, r.URL.Path, code)
		}
	}
	form := e.PostForm("/auth/account/factors/"+list.Factors[1].ID+"/remove", url.Values{}, session)
	if form.StatusCode != http.StatusSeeOther || form.Header.Get("Location") != "/auth/login?reauth=max-age&rd=%2Fauth%2Faccount" {
		t.Errorf("form removal with an old sign-in: %d %q", form.StatusCode, form.Header.Get("Location"))
	}
	have, err := e.Store.SecondFactors(t.Context(), u.ID)
	if err != nil || !have.Enrolled() {
		t.Errorf("the factor went with an old sign-in: %+v %v", have, err)
	}
	_ = other
}

// MF1, no way around the factor: the invitation, the reset then a sign-in, a
// second tab, the JSON API: never a session without it; a reset leaves
// the factors.
func TestSecondFactorNoWayAround(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{})
	u, secret, _ := e.enrolledUser(t, "ann@example.com")
	e.nextMail(t) // the notice of the enrolment

	token := e.resetToken(t, "ann@example.com")
	if resp := e.postReset(token, freshPassword); resp.StatusCode != http.StatusOK || e.SessionCookie(resp) != nil && e.SessionCookie(resp).MaxAge >= 0 {
		t.Fatalf("reset: %d", resp.StatusCode)
	}
	e.nextMail(t) // the password notice
	have, err := e.Store.SecondFactors(t.Context(), u.ID)
	if err != nil || !have.Enrolled() {
		t.Fatalf("a reset removed the factor: %+v %v", have, err)
	}
	step, _ := e.passwordStep(t, "ann@example.com", freshPassword)
	// A second tab of the same browser, or the JSON API, without the
	// factor: nothing reaches a session.
	for _, path := range []string{"/auth/me", "/auth/account/factors"} {
		if resp := e.Get(path, step); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s with the step cookie: %d", path, resp.StatusCode)
		}
	}
	r := e.NewRequest(http.MethodGet, "/auth/account", nil)
	r.Header.Set("Accept", "text/html")
	if resp := e.Do(r, step); resp.StatusCode != http.StatusFound || !strings.HasPrefix(resp.Header.Get("Location"), testBaseURL+"/auth/login") {
		t.Errorf("account page with the step cookie: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// A reset between the password and the code leaves no session.
	token = e.resetToken(t, "ann@example.com")
	if resp := e.postReset(token, "yet another passphrase"); resp.StatusCode != http.StatusOK {
		t.Fatalf("second reset: %d", resp.StatusCode)
	}
	e.nextMail(t)
	if resp := e.PostJSON("/auth/2fa", map[string]string{"code": totpCode(t, secret, e.Clock.Now())}, step); resp.StatusCode == http.StatusOK || e.SessionCookie(resp) != nil && e.SessionCookie(resp).MaxAge >= 0 {
		t.Errorf("a step begun before a reset made a session: %d", resp.StatusCode)
	}
}

// --second-factor=required: a password user without a factor gets no
// session until one is enrolled through the step; an invitation too.
func TestSecondFactorRequiredEnrolment(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.SecondFactor = SecondFactorRequired; c.InviteTTL = time.Hour })
	e.CreateUser(t, "ann@example.com", testPassword)

	resp := e.PostJSON("/auth/login", map[string]string{"email": "ann@example.com", "password": testPassword})
	var got stepAnswer
	e.DecodeJSON(t, resp, &got)
	if resp.StatusCode != http.StatusOK || !got.SecondFactorRequired || !got.EnrolmentRequired || len(got.Methods) != 0 || e.SessionCookie(resp) != nil {
		t.Fatalf("sign-in without a factor: %d %+v", resp.StatusCode, got)
	}
	step := cookieOf(resp, stepCookieName)
	if me := e.Get("/auth/me", step); me.StatusCode != http.StatusUnauthorized {
		t.Errorf("/auth/me before enrolment: %d", me.StatusCode)
	}
	if code := e.ProblemCode(t, e.PostJSON("/auth/2fa", map[string]string{"code": "123456"}, step), http.StatusUnauthorized); code != "invalid_code" {
		t.Errorf("a code before enrolment: %q", code)
	}
	resp = e.PostJSON("/auth/2fa/totp", "", step)
	var begun totpAnswer
	e.DecodeJSON(t, resp, &begun)
	if resp.StatusCode != http.StatusOK || begun.Secret == "" {
		t.Fatalf("enrol during the step: %d", resp.StatusCode)
	}
	resp = e.PostJSON("/auth/2fa/totp/confirm", map[string]string{"id": begun.ID, "code": totpCode(t, begun.Secret, e.Clock.Now())}, step)
	var done struct {
		RecoveryCodes []string `json:"recovery_codes"`
	}
	e.DecodeJSON(t, resp, &done)
	session := e.SessionCookie(resp)
	if resp.StatusCode != http.StatusOK || session == nil || len(done.RecoveryCodes) != 10 {
		t.Fatalf("confirm during the step: %d %+v", resp.StatusCode, done)
	}
	if s := e.sessionOf(t, session); !slices.Equal(s.AMR(), []string{"pwd", "otp", "mfa"}) {
		t.Errorf("amr %v", s.AMR())
	}

	// An invitation ends in the enrolment step too.
	ivy := e.CreateUser(t, "ivy@example.com", "")
	if err := e.Store.IssueInviteToken(t.Context(), storage.ResetToken{Hash: storage.HashSecret("invite-token"), UserID: ivy.ID,
		CreatedAt: e.Clock.Now(), ExpiresAt: e.Clock.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	resp = e.PostJSON("/auth/invite", map[string]string{"token": "invite-token", "password": "ivy's long passphrase"})
	e.DecodeJSON(t, resp, &got)
	if resp.StatusCode != http.StatusOK || !got.EnrolmentRequired || e.SessionCookie(resp) != nil || cookieOf(resp, stepCookieName) == nil {
		t.Errorf("invitation under required: %d %+v", resp.StatusCode, got)
	}
}

// An optional policy lets a user without a factor sign in as before.
func TestSecondFactorOptionalWithoutFactor(t *testing.T) {
	e := newTestEnv(t)
	e.CreateUser(t, "ann@example.com", testPassword)
	session := e.Login(t, "ann@example.com", testPassword)
	if s := e.sessionOf(t, session); !slices.Equal(s.AMR(), []string{"pwd"}) {
		t.Errorf("amr %v", s.AMR())
	}
}

// GET /auth/login?reauth=second-factor upgrades a session without a
// second factor through a step to a new session with it; without a
// factor it leads to the account page; ?reauth=max-age asks for the
// password again.
func TestSecondFactorReauth(t *testing.T) {
	e := newTestEnv(t)
	u := e.CreateUser(t, "ann@example.com", testPassword)
	plain := e.Login(t, "ann@example.com", testPassword)

	page := func(target string, c *http.Cookie) *http.Response {
		r := e.NewRequest(http.MethodGet, target, nil)
		r.Header.Set("Accept", "text/html")
		return e.Do(r, c)
	}
	if resp := page("/auth/login?reauth=second-factor&rd=%2Fadmin", plain); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/auth/account?rd=%2Fadmin#factors" {
		t.Errorf("no factor yet: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	secret, _ := e.enrolTOTP(t, plain)
	resp := page("/auth/login?reauth=second-factor&rd=%2Fadmin", plain)
	step := cookieOf(resp, stepCookieName)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/auth/2fa" || step == nil {
		t.Fatalf("with a factor: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp = e.PostForm("/auth/2fa", url.Values{"code": {totpCode(t, secret, e.Clock.Now())}}, step, plain)
	upgraded := e.SessionCookie(resp)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/admin" || upgraded == nil || upgraded.Value == plain.Value {
		t.Fatalf("upgrade: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if s := e.sessionOf(t, upgraded); !s.MultiFactor() || s.UserID != u.ID {
		t.Errorf("upgraded session %+v", s)
	}
	if _, err := e.Store.Session(t.Context(), storage.HashSecret(plain.Value)); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("the session without the factor survived the upgrade: %v", err)
	}
	resp = page("/auth/login?reauth=max-age&rd=%2Fadmin", upgraded)
	if body := e.Body(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(body, `name="password"`) || !strings.Contains(body, `value="/admin"`) {
		t.Errorf("max-age: %d\n%s", resp.StatusCode, body)
	}
}

// Enrolment and removal mail a notice and write audit events.
func TestSecondFactorNoticesAndAudit(t *testing.T) {
	var trail bytes.Buffer
	e := newMailEnv(t, mailEnvConfig{options: []func(*Config){func(c *Config) { c.Audit = audit.New(&trail, nil, nil) }}})
	e.CreateUser(t, "ann@example.com", testPassword)
	session := e.Login(t, "ann@example.com", testPassword)
	e.enrolTOTP(t, session)
	m := e.nextMail(t)
	if m.To != "ann@example.com" || !strings.Contains(m.Subject, "second factor") || !strings.Contains(m.Text, "a second factor was added") || !strings.Contains(m.Text, testBaseURL+"/auth/forgot") {
		t.Errorf("notice of the enrolment: %+v", m)
	}
	e.PostJSON("/auth/account/recovery-codes", "", session)
	if m := e.nextMail(t); !strings.Contains(m.Text, "new recovery codes") {
		t.Errorf("notice of new codes: %q", m.Text)
	}
	var list factorsAnswer
	e.DecodeJSON(t, e.Get("/auth/account/factors", session), &list)
	e.Do(e.JSONRequest(http.MethodDelete, "/auth/account/factors/"+list.Factors[0].ID, ""), session)
	if m := e.nextMail(t); !strings.Contains(m.Text, "a second factor was removed") {
		t.Errorf("notice of the removal: %q", m.Text)
	}
	for _, event := range []string{"factor_added", "recovery_codes_regenerated", "factor_removed"} {
		if !strings.Contains(trail.String(), `"event":"`+event+`"`) {
			t.Errorf("no %s in the audit trail:\n%s", event, trail.String())
		}
	}
	e.noMail(t)
}

// A provider sign-in steps through the second factor only under
// required-all: a user without one must enrol it, one with a factor gives it.
func TestSecondFactorRequiredAllProviderSignIn(t *testing.T) {
	for _, tc := range []struct {
		policy SecondFactorPolicy
		step   bool
	}{{SecondFactorRequired, false}, {SecondFactorRequiredAll, true}} {
		t.Run(string(tc.policy), func(t *testing.T) {
			e := newOAuthEnv(t, oauthEnvOptions{secondFactor: tc.policy})
			e.setNext("google", oauthtest.Account{Subject: "1001", Email: "new.user@example.com", EmailVerified: true})
			b := e.newBrowser()
			a := b.flow("/auth/login/google?rd=/welcome")
			_, session := a.cookie(oauthCookieName)
			step, stepped := a.cookie(stepCookieName)
			if !tc.step {
				if a.status != http.StatusSeeOther || a.location() != "/welcome" || !session || stepped {
					t.Fatalf("callback: %d to %q, session %v, step %v", a.status, a.location(), session, stepped)
				}
				return
			}
			if a.status != http.StatusSeeOther || a.location() != "/auth/2fa" || session || !stepped {
				t.Fatalf("callback: %d to %q, session %v, step %v", a.status, a.location(), session, stepped)
			}
			if _, ok := b.me(); ok {
				t.Fatal("a session before the enrolment")
			}
			st, err := e.Handler.second.factors.Step(t.Context(), step.Value)
			if err != nil || st.Method != "google" || st.Redirect != "/welcome" {
				t.Errorf("step %+v %v", st, err)
			}
		})
	}
}

// A password change re-issues the session with the second factor it was
// made with: the new id still counts as two factors.
func TestPasswordChangeKeepsTheSecondFactor(t *testing.T) {
	e := newTestEnv(t)
	_, secret, _ := e.enrolledUser(t, "ann@example.com")
	step, _ := e.passwordStep(t, "ann@example.com", testPassword)
	session := e.SessionCookie(e.PostJSON("/auth/2fa", map[string]string{"code": totpCode(t, secret, e.Clock.Now())}, step))
	resp := e.PostJSON("/auth/account/password", map[string]string{"current_password": testPassword, "password": "another long passphrase"}, session)
	renewed := e.SessionCookie(resp)
	if resp.StatusCode != http.StatusOK || renewed == nil || renewed.Value == session.Value {
		t.Fatalf("password change: %d", resp.StatusCode)
	}
	if s := e.sessionOf(t, renewed); !slices.Equal(s.AMR(), []string{"pwd", "otp", "mfa"}) {
		t.Errorf("amr after the password change %v", s.AMR())
	}
}

// Under required, the /auth/2fa page of a user without a factor shows a new
// authenticator app secret (QR code as a data: image, the key as text, the
// otpauth link); its form confirms, signs in and shows the recovery codes once.
func TestSecondFactorRequiredEnrolmentPage(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.SecondFactor = SecondFactorRequired })
	e.CreateUser(t, "ann@example.com", testPassword)
	resp := e.PostForm("/auth/login", url.Values{"email": {"ann@example.com"}, "password": {testPassword}, "rd": {"/app"}})
	step := cookieOf(resp, stepCookieName)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/auth/2fa" || step == nil || e.SessionCookie(resp) != nil {
		t.Fatalf("form sign-in: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	r := e.NewRequest(http.MethodGet, "/auth/2fa", nil)
	r.Header.Set("Accept", "text/html")
	page := e.Do(r, step)
	body := e.Body(t, page)
	for _, want := range []string{`<img src="data:image/png;base64,`, `href="otpauth://totp/`, `<code class="secret">`, `action="/auth/2fa/totp/confirm"`} {
		if !strings.Contains(body, want) {
			t.Errorf("enrolment page lacks %q:\n%s", want, body)
		}
	}
	if csp := page.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "img-src 'self' data:") {
		t.Errorf("CSP %q does not allow the QR code", csp)
	}
	id := between(body, `name="id" value="`, `"`)
	secret := between(body, `<code class="secret">`, `<`)
	resp = e.PostForm("/auth/2fa/totp/confirm", url.Values{"id": {id}, "code": {totpCode(t, secret, e.Clock.Now())}}, step)
	body = e.Body(t, resp)
	if resp.StatusCode != http.StatusOK || e.SessionCookie(resp) == nil || strings.Count(body, "<li><code>") != 10 || !strings.Contains(body, `href="/app"`) {
		t.Errorf("confirm: %d\n%s", resp.StatusCode, body)
	}
}

// between is the text of s after the first start, up to end.
func between(s, start, end string) string {
	_, after, _ := strings.Cut(s, start)
	v, _, _ := strings.Cut(after, end)
	return v
}

// A session that recorded no sign-in method (made before methods were
// kept) cannot be upgraded: ?reauth=second-factor asks to sign in afresh.
func TestSecondFactorReauthOfSessionWithoutMethod(t *testing.T) {
	e := newTestEnv(t)
	u := e.CreateUser(t, "ann@example.com", testPassword)
	enrolling := e.Login(t, "ann@example.com", testPassword)
	e.enrolTOTP(t, enrolling)
	old := e.StartSession(t, u)
	r := e.NewRequest(http.MethodGet, "/auth/login?reauth=second-factor&rd=%2Fadmin", nil)
	r.Header.Set("Accept", "text/html")
	resp := e.Do(r, old)
	if body := e.Body(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(body, `name="password"`) || cookieOf(resp, stepCookieName) != nil {
		t.Errorf("reauth of a session without a method: %d\n%s", resp.StatusCode, body)
	}
}
