package authflows

import (
	"net/http"
	"testing"
)

// CK1: with Secure cookies the second-factor step cookie is a __Host- one
// (Path=/, no Domain), which a sibling host cannot plant; a cookie of the
// plain name, as a sibling could set, binds no step.
func TestSecondFactorStepCookieHostPrefix(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.CookieSecure = true })
	_, secret, _ := e.enrolledUser(t, "cy@example.com")
	resp := e.PostJSON("/auth/login", map[string]string{"email": "cy@example.com", "password": testPassword})
	resp.Body.Close()
	step := cookieOf(resp, "__Host-gatehouse_2fa")
	if step == nil || !step.Secure || step.Path != "/" || step.Domain != "" || !step.HttpOnly {
		t.Fatalf("step cookie %+v, want __Host-gatehouse_2fa, Secure, Path=/, no Domain", step)
	}
	if plain := cookieOf(resp, "gatehouse_2fa"); plain != nil {
		t.Errorf("a step cookie of the plain name too: %+v", plain)
	}
	planted := &http.Cookie{Name: "gatehouse_2fa", Value: step.Value}
	if code := e.ProblemCode(t, e.PostJSON("/auth/2fa", map[string]string{"code": totpCode(t, secret, e.Clock.Now())}, planted), http.StatusUnauthorized); code != "step_expired" {
		t.Errorf("a step cookie of the plain name: %q, want step_expired", code)
	}
	if resp := e.PostJSON("/auth/2fa", map[string]string{"code": totpCode(t, secret, e.Clock.Now())}, step); resp.StatusCode != http.StatusOK {
		t.Errorf("the __Host- step cookie: %d, want 200", resp.StatusCode)
	}
}

// CK1 for the passkey ceremony: with Secure cookies its cookie is a
// __Host- one, and a cookie of the plain name, as a sibling could set,
// finishes no ceremony.
func TestPasskeyCeremonyCookieHostPrefix(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.CookieSecure = true })
	resp := e.PostJSON("/auth/passkey/login/begin", "")
	resp.Body.Close()
	c := cookieOf(resp, "__Host-gatehouse_webauthn")
	if c == nil || !c.Secure || c.Path != "/" || c.Domain != "" || !c.HttpOnly {
		t.Fatalf("ceremony cookie %+v, want __Host-gatehouse_webauthn, Secure, Path=/, no Domain", c)
	}
	if plain := cookieOf(resp, "gatehouse_webauthn"); plain != nil {
		t.Errorf("a ceremony cookie of the plain name too: %+v", plain)
	}
	planted := &http.Cookie{Name: "gatehouse_webauthn", Value: c.Value}
	if code := e.ProblemCode(t, e.PostJSON("/auth/passkey/login/finish", `{"id":"x"}`, planted), http.StatusUnauthorized); code != "invalid_credential" {
		t.Errorf("a ceremony cookie of the plain name: %q, want invalid_credential", code)
	}
}
