package authflows

import (
	"context"
	"net/http"
	"testing"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// revokeBeforeUserRead revokes every session of the user (`users
// revoke-sessions`, or "sign out everywhere" from another browser) once
// armed, just before the account page's password change reads the user:
// the change has already found its session, the revocation commits, then
// the change reads the user at the revocation's epoch.
type revokeBeforeUserRead struct {
	storage.Store
	armed, fired bool
}

func (s *revokeBeforeUserRead) UserByID(ctx context.Context, id string) (storage.User, error) {
	if s.armed && !s.fired {
		s.fired = true
		if _, err := s.Store.DeleteUserSessions(ctx, id); err != nil {
			return storage.User{}, err
		}
	}
	return s.Store.UserByID(ctx, id)
}

// CR1 (storage.Store.ChangePassword: "only if the user is still ... at
// epoch"): the change compares against the session's own Epoch, not the
// Epoch of the user read after finding the session. A revocation that
// commits between the two moves the user's Epoch and deletes the session;
// the change must then fail and start no session for the browser whose
// session was just revoked.
func TestPasswordChangeOfRevokedSessionMakesNoSession(t *testing.T) {
	const newPassword = "a brand new passphrase 9"
	wrapped := &revokeBeforeUserRead{}
	e := newTestEnv(t, func(c *Config) {
		wrapped.Store = c.Store.(storage.Store)
		c.Store = wrapped
	})
	e.CreateUser(t, "alice@example.com", oldPassword)
	revoked := e.Login(t, "alice@example.com", oldPassword)
	wrapped.armed = true
	resp := e.PostJSON("/auth/account/password", map[string]string{"current_password": oldPassword, "password": newPassword, "confirm": newPassword}, revoked)
	if !wrapped.fired {
		t.Fatalf("the revocation never ran: change answered %d %s", resp.StatusCode, e.Body(t, resp))
	}
	if resp.StatusCode == http.StatusOK {
		t.Errorf("a password change whose session was revoked meanwhile succeeded (%s)", e.Body(t, resp))
	}
	if c := e.SessionCookie(resp); c != nil && c.Value != "" {
		if me := e.Get("/auth/me", c); me.StatusCode == http.StatusOK {
			t.Errorf("the revoked browser holds a session made after the revocation")
		}
	}
}
