package authflows

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// AD2: an invitation sets an account's first password, nothing more. Once
// the account has a password by another way (the operator's `users
// set-password`, a completed reset), a link still waiting in a mailbox
// must not replace that password: it would change it without the current
// one, without revoking sessions and without a notice mail.
func TestInviteVoidOnceThePasswordIsSet(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.InviteTTL = 72 * time.Hour })
	u := e.CreateUser(t, "ivy@example.com", "")
	inviteToken := "waiting-invite-token"
	if err := e.Store.IssueInviteToken(t.Context(), storage.ResetToken{Hash: storage.HashSecret(inviteToken), UserID: u.ID,
		CreatedAt: e.Clock.Now(), ExpiresAt: e.Clock.Now().Add(72 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	// The operator sets the password instead (what `users set-password` stores).
	hash, err := e.Hasher.Hash(t.Context(), password.Normalize("the operator's long passphrase"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.SetPasswordHash(t.Context(), u.ID, hash); err != nil {
		t.Fatal(err)
	}
	session := e.Login(t, "ivy@example.com", "the operator's long passphrase")

	r := e.NewRequest(http.MethodGet, "/auth/invite?token="+inviteToken, nil)
	r.Header.Set("Accept", "text/html")
	if resp := e.Do(r); resp.StatusCode != http.StatusGone {
		t.Errorf("invite page of an account with a password: %d, want 410", resp.StatusCode)
	} else if page := e.Body(t, resp); !strings.Contains(page, "This invitation has expired") || strings.Contains(page, `name="token"`) {
		t.Errorf("the invite page still offers a form for an account with a password:\n%s", page)
	}
	resp := e.PostJSON("/auth/invite", map[string]string{"token": inviteToken, "password": "an attacker's long passphrase"})
	if code := e.ProblemCode(t, resp, http.StatusBadRequest); code != "invalid_token" {
		t.Errorf("accepting the invitation of an account with a password: %q, want invalid_token", code)
	}
	stored, err := e.Store.UserByID(t.Context(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.PasswordHash != hash {
		t.Fatal("a waiting invitation replaced the password set by the operator")
	}
	if resp := e.Get("/auth/account", session); resp.StatusCode != http.StatusOK {
		t.Errorf("the user's session: %d", resp.StatusCode)
	}
}
