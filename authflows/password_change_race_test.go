package authflows

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// resetBeforePasswordWrite completes the owner's reset just before a
// password change on the account page writes its hash: the change checked
// the current password (and hashed the new one, behind the hashing
// semaphore, up to 2 s when it is busy) before the reset landed, and writes
// after it.
type resetBeforePasswordWrite struct {
	storage.Store
	ownerHash string
	done      bool
}

func (s *resetBeforePasswordWrite) ChangePassword(ctx context.Context, userID string, epoch uint64, hash string) (storage.User, int, error) {
	if !s.done {
		s.done = true
		u, err := s.Store.UserByID(ctx, userID)
		if err != nil {
			return storage.User{}, 0, err
		}
		tok := storage.ResetToken{Hash: storage.HashSecret("owner's token"), UserID: userID, CreatedAt: u.CreatedAt, ExpiresAt: u.CreatedAt.Add(time.Hour)}
		if err := s.Store.IssueResetToken(ctx, tok); err != nil {
			return storage.User{}, 0, err
		}
		if _, _, err := s.Store.CompleteReset(ctx, tok.Hash, u.CreatedAt, s.ownerHash, storage.Mail{}); err != nil {
			return storage.User{}, 0, err
		}
	}
	return s.Store.ChangePassword(ctx, userID, epoch, hash)
}

// CR1 and RS3/RS4: an intruder holds a stolen session and the password and
// changes the password on the account page while the owner completes a
// reset. The change verified the old password before the reset; it then
// used to write its hash unconditionally, undoing the owner's reset, and
// re-read the user to make its new session at whatever epoch the user was
// at then, the reset's bump included: the intruder kept the account and a
// session made after the reset. ChangePassword now refuses a change checked
// at an older epoch.
func TestPasswordChangeRacingResetLosesToTheReset(t *testing.T) {
	const intruderPassword = "the intruder's passphrase 7"
	wrapped := &resetBeforePasswordWrite{}
	e := newTestEnv(t, func(c *Config) {
		wrapped.Store = c.Store.(storage.Store)
		c.Store = wrapped
	})
	u := e.CreateUser(t, "alice@example.com", oldPassword)
	var err error
	if wrapped.ownerHash, err = e.Hasher.Hash(t.Context(), password.Normalize(freshPassword)); err != nil {
		t.Fatal(err)
	}
	stolen := e.Login(t, "alice@example.com", oldPassword)
	resp := e.PostJSON("/auth/account/password", map[string]string{"current_password": oldPassword, "password": intruderPassword, "confirm": intruderPassword}, stolen)
	if !wrapped.done {
		t.Fatalf("the owner's reset never ran: change answered %d %s", resp.StatusCode, e.Body(t, resp))
	}
	if resp.StatusCode == http.StatusOK {
		t.Errorf("a password change that checked the password before the owner's reset succeeded after it")
	}
	if c := e.SessionCookie(resp); c != nil && c.Value != "" {
		if me := e.Get("/auth/me", c); me.StatusCode == http.StatusOK {
			t.Errorf("the intruder holds a session made after the owner's reset")
		}
	}
	stored, err := e.Store.UserByID(t.Context(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := e.Hasher.Verify(t.Context(), stored.PasswordHash, password.Normalize(freshPassword)); !ok {
		t.Errorf("the owner's reset password no longer works: the change overwrote it")
	}
}

// deletedBeforeChange deletes the user just before the account page's
// ChangePassword: `users delete` landing while the change hashed.
type deletedBeforeChange struct{ storage.Store }

func (s deletedBeforeChange) ChangePassword(ctx context.Context, userID string, epoch uint64, hash string) (storage.User, int, error) {
	if err := s.Store.DeleteUser(ctx, userID); err != nil {
		return storage.User{}, 0, err
	}
	return s.Store.ChangePassword(ctx, userID, epoch, hash)
}

// A password change whose account was deleted meanwhile is a session that
// ended (401), not a store outage (503, logged as an error).
func TestPasswordChangeOfDeletedAccountIsNoStoreOutage(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.Store = deletedBeforeChange{c.Store.(storage.Store)} })
	e.CreateUser(t, "ann@example.com", oldPassword)
	session := e.Login(t, "ann@example.com", oldPassword)
	resp := e.PostJSON("/auth/account/password", map[string]string{"current_password": oldPassword, "password": freshPassword, "confirm": freshPassword}, session)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("password change of an account deleted meanwhile: %d %s, want 401", resp.StatusCode, e.Body(t, resp))
	}
}
