package authflows

import (
	"net/http"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/admin"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// AD2 and the store's contract (storage.Store.InviteTokenUser: "once a
// password is set ... or the user is disabled, the token is ErrNotFound";
// bolt's invitedUser: "either way the invitation is void"). An operator who
// disables an invited account (wrong address, a person who left, a mailbox
// suspected compromised) voids the link that is waiting in the mailbox.
// Enabling the account later must not bring that link back: today disabling
// only hides the invite token while the flag is set, so `users enable`
// revives it and whoever holds the old mail sets the first password and is
// signed in.
func TestInviteStaysVoidAfterDisableAndEnable(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.InviteTTL = 72 * time.Hour })
	svc := &admin.Service{Store: e.Store, Clock: e.Clock.Now}
	u := e.CreateUser(t, "ivy@example.com", "")
	inviteToken := "waiting-invite-token"
	if err := e.Store.IssueInviteToken(t.Context(), storage.ResetToken{Hash: storage.HashSecret(inviteToken), UserID: u.ID,
		CreatedAt: e.Clock.Now(), ExpiresAt: e.Clock.Now().Add(72 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SetDisabled(t.Context(), "ivy@example.com", true); err != nil {
		t.Fatal(err)
	}
	resp := e.PostJSON("/auth/invite", map[string]string{"token": inviteToken, "password": "an attacker's long passphrase"})
	if code := e.ProblemCode(t, resp, http.StatusBadRequest); code != "invalid_token" {
		t.Fatalf("invitation of a disabled account: %q, want invalid_token", code)
	}
	if _, err := svc.SetDisabled(t.Context(), "ivy@example.com", false); err != nil {
		t.Fatal(err)
	}
	resp = e.PostJSON("/auth/invite", map[string]string{"token": inviteToken, "password": "an attacker's long passphrase"})
	if resp.StatusCode == http.StatusOK {
		t.Errorf("the invitation voided by disabling the account works again after enabling it (session cookie set: %v)", e.SessionCookie(resp) != nil)
	}
	if stored, err := e.Store.UserByID(t.Context(), u.ID); err != nil || stored.PasswordHash != "" {
		t.Errorf("after enable, the old invitation set the account's password (%v)", err)
	}
}

// The same hole for reset links: the server mails no reset link to a
// disabled account (reset.go: "disabled after the job was queued: no link
// goes out"; QueueResetRequest mails a disabled account nothing), but a link
// mailed a minute before the operator disabled the account still sets a new
// password on the disabled account, and that password is what works once
// the account is enabled again. Disabling should void the user's pending
// reset (and invite) tokens in its transaction, as a completed reset voids
// the others.
func TestDisableVoidsPendingResetLink(t *testing.T) {
	e := newTestEnv(t)
	svc := &admin.Service{Store: e.Store, Clock: e.Clock.Now}
	u := e.CreateUser(t, "ann@example.com", oldPassword)
	resetToken := e.IssueResetToken(t, u)
	if _, err := svc.SetDisabled(t.Context(), "ann@example.com", true); err != nil {
		t.Fatal(err)
	}
	if e.ResetTokenValid(t, resetToken) {
		t.Error("the reset token mailed before the account was disabled is still valid")
	}
	resp := e.PostJSON("/auth/reset", map[string]string{"token": resetToken, "password": freshPassword})
	if resp.StatusCode == http.StatusOK {
		t.Error("a reset link completed on a disabled account")
	}
	if _, err := svc.SetDisabled(t.Context(), "ann@example.com", false); err != nil {
		t.Fatal(err)
	}
	if resp := e.PostJSON("/auth/login", map[string]string{"email": "ann@example.com", "password": freshPassword}); resp.StatusCode == http.StatusOK {
		t.Error("after enable, the password set through the old reset link signs in")
	}
}
