package authflows

import (
	"net/http"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/policy"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// The access policy holds on every path that makes a session, not only
// POST /auth/login and the OAuth callback (README "Access policy": "checked
// at every sign-in … no session made").

// Accepting an invitation signs in, so it passes the policy: an invited
// address the policy does not let in gets 403 access_denied and no session.
func TestInviteAcceptRefusedByPolicy(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.Policy = newPolicy(t, policy.Rules{EmailDomains: []string{"corp.com"}}) })
	for _, tc := range []struct {
		email string
		pass  bool
	}{{"in@corp.com", true}, {"out@example.com", false}} {
		u := e.CreateUser(t, tc.email, "")
		token := "invite-of-" + tc.email
		if err := e.Store.IssueInviteToken(t.Context(), storage.ResetToken{Hash: storage.HashSecret(token), UserID: u.ID,
			CreatedAt: e.Clock.Now(), ExpiresAt: e.Clock.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		resp := e.PostJSON("/auth/invite", map[string]string{"token": token, "password": "a fine long passphrase"})
		if tc.pass {
			if resp.StatusCode != http.StatusOK || e.SessionCookie(resp) == nil {
				t.Errorf("%s: %d, want 200 with a session", tc.email, resp.StatusCode)
			}
			continue
		}
		if code := e.ProblemCode(t, resp, http.StatusForbidden); code != "access_denied" {
			t.Errorf("%s: code %q, want access_denied", tc.email, code)
		}
		if e.SessionCookie(resp) != nil {
			t.Errorf("%s: a refused invitation set a session cookie", tc.email)
		}
		if n := sessionCount(t, e, u.ID); n != 0 {
			t.Errorf("%s: %d sessions stored", tc.email, n)
		}
	}
}

// A password change makes this browser a new session; for a user the
// policy no longer lets in (their session predates the rule) it is refused
// with 403 access_denied and changes nothing: no new session, the password
// as it was.
func TestPasswordChangeRefusedByPolicy(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.Policy = newPolicy(t, policy.Rules{EmailDomains: []string{"corp.com"}}) })
	const newPassword = "a brand new passphrase"
	for _, tc := range []struct {
		email string
		pass  bool
	}{{"in@corp.com", true}, {"out@example.com", false}} {
		u := e.CreateUser(t, tc.email, testPassword)
		old := e.StartSession(t, u) // made before the policy refused the address
		resp := e.PostJSON("/auth/account/password", map[string]string{"current_password": testPassword, "password": newPassword}, old)
		if tc.pass {
			if resp.StatusCode != http.StatusOK || e.SessionCookie(resp) == nil {
				t.Errorf("%s: %d, want 200 with a new session", tc.email, resp.StatusCode)
			}
			continue
		}
		if code := e.ProblemCode(t, resp, http.StatusForbidden); code != "access_denied" {
			t.Errorf("%s: code %q, want access_denied", tc.email, code)
		}
		if c := e.SessionCookie(resp); c != nil && c.MaxAge >= 0 {
			t.Errorf("%s: a refused password change set a session cookie", tc.email)
		}
		if n := sessionCount(t, e, u.ID); n != 1 {
			t.Errorf("%s: %d sessions stored, want the old one only", tc.email, n)
		}
		after, err := e.Store.UserByID(t.Context(), u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if after.PasswordHash != u.PasswordHash {
			t.Errorf("%s: the password changed although the change was refused", tc.email)
		}
	}
}

func sessionCount(t *testing.T, e *testEnv, userID string) int {
	t.Helper()
	ss, err := e.Store.SessionsOfUser(t.Context(), userID)
	if err != nil {
		t.Fatal(err)
	}
	return len(ss)
}
