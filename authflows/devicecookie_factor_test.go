package authflows

import (
	"net/http"
	"testing"
)

// MF2, DV1: device cookies collected by password sign-ins before the user
// enrolled a second factor do not widen the guessing budget of that factor:
// their failures count in the account's bucket (5 per 15 minutes in all),
// not 5 per cookie. Only a cookie of a sign-in that gave a second factor
// (the owner's, TestSecondFactorRateLimited) has its own bucket.
func TestSecondFactorDeviceCookiesOfOneFactorSignIns(t *testing.T) {
	e := newTestEnv(t)
	e.CreateUser(t, "bea@example.com", testPassword)
	var devices []*http.Cookie
	var session *http.Cookie
	for range 2 { // someone who has the password signs in twice before the enrolment
		resp := e.PostJSON("/auth/login", map[string]string{"email": "bea@example.com", "password": testPassword})
		session = e.SessionCookie(resp)
		device := cookieOf(resp, deviceCookieName)
		if resp.StatusCode != http.StatusOK || device == nil || session == nil {
			t.Fatalf("password sign-in: %d, device cookie %v", resp.StatusCode, device)
		}
		devices = append(devices, device)
	}
	e.enrolTOTP(t, session)

	attempt := func(device *http.Cookie) *http.Response {
		step, _ := e.passwordStep(t, "bea@example.com", testPassword, device)
		return e.PostJSON("/auth/2fa", map[string]string{"code": "000000"}, step, device)
	}
	for i := range 5 {
		if code := e.ProblemCode(t, attempt(devices[0]), http.StatusUnauthorized); code != "invalid_code" {
			t.Fatalf("attempt %d: %q", i+1, code)
		}
	}
	if code := e.ProblemCode(t, attempt(devices[1]), http.StatusTooManyRequests); code != "rate_limited" {
		t.Errorf("a sixth guess with another pre-enrolment device cookie: %q, want 429 rate_limited", code)
	}
}
