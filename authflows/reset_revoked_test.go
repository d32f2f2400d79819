package authflows

import (
	"net/http"
	"testing"
)

// A reset link mailed before the account was disabled. PrepareMail sends
// no link to a disabled user and /auth/forgot queues none ("mailed
// nothing", AP2), but a token issued before the disable stays usable:
// whoever holds it (the attacker the administrator just locked out, who
// reads the victim's mail) sets a password on the disabled account, which
// works the moment the account is enabled again. Invitations are void once
// their user is disabled (AD2); a reset token should be too.
func TestResetTokenOfDisabledUserRefused(t *testing.T) {
	e := newTestEnv(t)
	u := e.CreateUser(t, "alice@example.com", oldPassword)
	resetToken := e.IssueResetToken(t, u)
	if _, err := e.Store.SetUserDisabled(t.Context(), u.ID, true); err != nil {
		t.Fatal(err)
	}
	resp := e.PostJSON("/auth/reset", map[string]string{"token": resetToken, "password": freshPassword})
	if resp.StatusCode == http.StatusOK {
		t.Errorf("reset of a disabled account with a token issued before the disable: 200 %s, want 400 invalid_token", e.Body(t, resp))
	}
	if _, err := e.Store.SetUserDisabled(t.Context(), u.ID, false); err != nil {
		t.Fatal(err)
	}
	if resp := e.PostJSON("/auth/login", map[string]string{"email": "alice@example.com", "password": freshPassword}); resp.StatusCode == http.StatusOK {
		t.Errorf("after the account is enabled again, the password set through the old link signs in")
	}
}

// A password change on the account page is what an owner does who fears
// someone else is in: every other session is revoked (CR1). A reset link
// that is still out (one the intruder asked for and read in the owner's
// mailbox) survives the change, and sets a password of the intruder's
// choosing over the owner's new one. A reset voids every other token of
// the user (RS3); a change of the password by any other way should too.
func TestPasswordChangeVoidsResetTokens(t *testing.T) {
	e := newTestEnv(t)
	u := e.CreateUser(t, "alice@example.com", oldPassword)
	resetToken := e.IssueResetToken(t, u) // outstanding, in the intruder's hands
	owner := e.Login(t, "alice@example.com", oldPassword)
	resp := e.PostJSON("/auth/account/password", map[string]string{"current_password": oldPassword, "password": freshPassword, "confirm": freshPassword}, owner)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("password change: %d %s", resp.StatusCode, e.Body(t, resp))
	}
	if e.ResetTokenValid(t, resetToken) {
		t.Errorf("a reset token issued before the password change is still valid after it")
	}
	resp = e.PostJSON("/auth/reset", map[string]string{"token": resetToken, "password": "intruder's own passphrase 42"})
	if resp.StatusCode == http.StatusOK {
		t.Errorf("the old reset link replaced the password the owner just chose")
	}
}
