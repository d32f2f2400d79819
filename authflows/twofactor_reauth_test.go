package authflows

import (
	"net/http"
	"net/url"
	"testing"
	"time"
)

// A password change re-issues the session with a new id but the same
// sign-in: its creation time (what max-age and the 10-minute window of
// account changes read) and its absolute expiry stay those of the
// replaced session, so that no action of the user extends --session-ttl.
func TestPasswordChangeKeepsTheSignInTime(t *testing.T) {
	e := newTestEnv(t)
	e.CreateUser(t, "ann@example.com", testPassword)
	session := e.Login(t, "ann@example.com", testPassword)
	before := e.sessionOf(t, session)
	e.Clock.Advance(9 * time.Minute)
	resp := e.PostJSON("/auth/account/password", map[string]string{"current_password": testPassword, "password": "another long passphrase"}, session)
	renewed := e.SessionCookie(resp)
	if resp.StatusCode != http.StatusOK || renewed == nil || renewed.Value == session.Value {
		t.Fatalf("password change: %d", resp.StatusCode)
	}
	after := e.sessionOf(t, renewed)
	if !after.CreatedAt.Equal(before.CreatedAt) || !after.ExpiresAt.Equal(before.ExpiresAt) {
		t.Errorf("re-issued session created %v expires %v, want %v and %v", after.CreatedAt, after.ExpiresAt, before.CreatedAt, before.ExpiresAt)
	}
	if remaining := int(before.ExpiresAt.Sub(e.Clock.Now()).Seconds()); renewed.MaxAge > remaining {
		t.Errorf("re-issued cookie Max-Age %d beyond the session's remaining %d s", renewed.MaxAge, remaining)
	}
	// Past the window of the sign-in, a second change needs a sign-in again:
	// the first change did not count as one.
	e.Clock.Advance(2 * time.Minute)
	resp = e.PostJSON("/auth/account/password", map[string]string{"current_password": "another long passphrase", "password": "a third long passphrase"}, renewed)
	if code := e.ProblemCode(t, resp, http.StatusUnauthorized); code != "reauthentication_required" {
		t.Errorf("second change 11 minutes after the sign-in: %q, want reauthentication_required", code)
	}
}

// MF3: ?reauth=second-factor adds a second factor to a session; it is not
// a sign-in: the upgraded session keeps the creation time and absolute
// expiry of the one it replaces, so that the code alone neither passes a
// route's max-age nor opens the 10-minute window to remove a factor or
// change the password.
func TestSecondFactorReauthKeepsTheSignInTime(t *testing.T) {
	e := newTestEnv(t)
	e.CreateUser(t, "ann@example.com", testPassword)
	plain := e.Login(t, "ann@example.com", testPassword)
	secret, _ := e.enrolTOTP(t, plain)
	before := e.sessionOf(t, plain)
	e.Clock.Advance(3 * time.Hour)

	r := e.NewRequest(http.MethodGet, "/auth/login?reauth=second-factor&rd=%2Fadmin", nil)
	r.Header.Set("Accept", "text/html")
	resp := e.Do(r, plain)
	step := cookieOf(resp, stepCookieName)
	if resp.StatusCode != http.StatusSeeOther || step == nil {
		t.Fatalf("reauth: %d", resp.StatusCode)
	}
	resp = e.PostForm("/auth/2fa", url.Values{"code": {totpCode(t, secret, e.Clock.Now())}}, step, plain)
	upgraded := e.SessionCookie(resp)
	if resp.StatusCode != http.StatusSeeOther || upgraded == nil {
		t.Fatalf("upgrade: %d", resp.StatusCode)
	}
	after := e.sessionOf(t, upgraded)
	if !after.MultiFactor() || !after.CreatedAt.Equal(before.CreatedAt) || !after.ExpiresAt.Equal(before.ExpiresAt) {
		t.Errorf("upgraded session mfa %v created %v expires %v, want created %v expires %v",
			after.MultiFactor(), after.CreatedAt, after.ExpiresAt, before.CreatedAt, before.ExpiresAt)
	}
	var list factorsAnswer
	e.DecodeJSON(t, e.Get("/auth/account/factors", upgraded), &list)
	if len(list.Factors) != 1 {
		t.Fatalf("factors %+v", list)
	}
	resp = e.Do(e.JSONRequest(http.MethodDelete, "/auth/account/factors/"+list.Factors[0].ID, ""), upgraded)
	if code := e.ProblemCode(t, resp, http.StatusUnauthorized); code != "reauthentication_required" {
		t.Errorf("removing the factor with a session of a 3-hour-old sign-in plus a code: %q", code)
	}
}

// A ?reauth=second-factor step whose session reached its absolute expiry
// meanwhile makes no session: step_expired, not a 200 with a dead cookie.
func TestSecondFactorReauthOfAnExpiredSession(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.SessionTTL = time.Hour })
	e.CreateUser(t, "ann@example.com", testPassword)
	plain := e.Login(t, "ann@example.com", testPassword)
	secret, _ := e.enrolTOTP(t, plain)
	e.Clock.Advance(58 * time.Minute)
	r := e.NewRequest(http.MethodGet, "/auth/login?reauth=second-factor&rd=%2Fadmin", nil)
	r.Header.Set("Accept", "text/html")
	step := cookieOf(e.Do(r, plain), stepCookieName)
	if step == nil {
		t.Fatal("no step")
	}
	e.Clock.Advance(3 * time.Minute)
	resp := e.PostJSON("/auth/2fa", map[string]string{"code": totpCode(t, secret, e.Clock.Now())}, step, plain)
	if code := e.ProblemCode(t, resp, http.StatusUnauthorized); code != "step_expired" {
		t.Errorf("code after the session's expiry: %q, want step_expired", code)
	}
	if c := e.SessionCookie(resp); c != nil && c.MaxAge > 0 {
		t.Errorf("a session cookie %+v", c)
	}
}
