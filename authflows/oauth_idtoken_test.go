package authflows

import (
	"net/http"
	"testing"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
)

// OA2: Google's ID token must come from the expected issuer, for this
// client, unexpired, with this flow's nonce; otherwise 400 invalid_id_token
// and nobody is signed in.
func TestOAuthGoogleIDTokenChecks(t *testing.T) {
	tests := []struct {
		name string
		edit func(c map[string]any)
	}{
		{"wrong nonce", func(c map[string]any) { c["nonce"] = "another-flow" }},
		{"no nonce", func(c map[string]any) { delete(c, "nonce") }},
		{"wrong audience", func(c map[string]any) { c["aud"] = "someone-else"; c["azp"] = "someone-else" }},
		{"no audience", func(c map[string]any) { delete(c, "aud") }},
		{"audience list with another azp", func(c map[string]any) { c["aud"] = []string{googleClientID, "other"}; c["azp"] = "other" }},
		{"audience list without azp", func(c map[string]any) { c["aud"] = []string{googleClientID, "other"}; delete(c, "azp") }},
		{"wrong issuer", func(c map[string]any) { c["iss"] = "https://evil.example" }},
		{"expired", func(c map[string]any) { c["exp"] = c["iat"] }},
		{"no exp", func(c map[string]any) { delete(c, "exp") }},
		{"no sub", func(c map[string]any) { delete(c, "sub") }},
	}
	e := newOAuthEnv(t, oauthEnvOptions{})
	e.google.SetNext(oauthtest.Account{Subject: "g-123", Email: "ida@example.com", EmailVerified: true})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.google.EditNextIDToken(tt.edit)
			b := e.newBrowser()
			a := b.flow("/auth/login/google")
			if a.status != http.StatusBadRequest || a.problemCode() != "invalid_id_token" {
				t.Errorf("%d %s, want 400 invalid_id_token", a.status, a.body)
			}
			if _, ok := b.me(); ok {
				t.Error("signed in")
			}
		})
	}
	if users, _ := e.Store.ListUsers(t.Context()); len(users) != 0 {
		t.Errorf("users created: %+v", users)
	}
	// The untouched token still works, and an audience list naming us with
	// our azp is fine.
	e.google.EditNextIDToken(func(c map[string]any) { c["aud"] = []string{googleClientID, "other"} })
	if a := e.newBrowser().flow("/auth/login/google"); a.status != http.StatusSeeOther {
		t.Errorf("valid token with audience list: %d %s", a.status, a.body)
	}
}

// email_verified false in the ID token: no new user.
func TestOAuthGoogleUnverifiedClaim(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	e.google.SetNext(oauthtest.Account{Subject: "g-1", Email: "ida@example.com", EmailVerified: true})
	e.google.EditNextIDToken(func(c map[string]any) { c["email_verified"] = "false" })
	if a := e.newBrowser().flow("/auth/login/google"); a.status != http.StatusForbidden || a.problemCode() != "email_not_verified" {
		t.Errorf("%d %s", a.status, a.body)
	}
}

// An ID token without email claims: the email comes from /userinfo.
func TestOAuthGoogleUserinfoFallback(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	e.google.OmitEmailClaims(true)
	e.google.SetNext(oauthtest.Account{Subject: "g-77", Email: "Info@Example.com", EmailVerified: true})
	b := e.newBrowser()
	if a := b.flow("/auth/login/google"); a.status != http.StatusSeeOther {
		t.Fatalf("%d %s", a.status, a.body)
	}
	if me, _ := b.me(); me.Email != "info@example.com" {
		t.Errorf("email = %q, want it from /userinfo", me.Email)
	}
}

// Without a configured issuer, Google's own is expected: a fake claiming it
// works, one claiming its own URL does not.
func TestOAuthGoogleDefaultIssuer(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{googleDefaultIssuer: true})
	e.google.SetNext(oauthtest.Account{Subject: "g-5", Email: "iss@example.com", EmailVerified: true})
	if a := e.newBrowser().flow("/auth/login/google"); a.status != http.StatusBadRequest || a.problemCode() != "invalid_id_token" {
		t.Errorf("fake issuer: %d %s, want 400 invalid_id_token", a.status, a.body)
	}
	e.google.SetIssuer("https://accounts.google.com")
	if a := e.newBrowser().flow("/auth/login/google"); a.status != http.StatusSeeOther {
		t.Errorf("Google's issuer: %d %s", a.status, a.body)
	}
}
