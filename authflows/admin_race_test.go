package authflows

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/gatehouse-auth/gatehouse/authflows/admin"
	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// adminBeforeWrite runs act (an operator's command) once, right before the
// account page's ChangePassword reaches the store: it has checked the
// current password and is about to write the new one when the operator's
// change lands. act works on the store underneath, not through this wrapper.
type adminBeforeWrite struct {
	storage.Store
	once sync.Once
	act  func(ctx context.Context)
}

func (s *adminBeforeWrite) ChangePassword(ctx context.Context, userID string, epoch uint64, hash string) (storage.User, int, error) {
	s.once.Do(func() { s.act(ctx) })
	return s.Store.ChangePassword(ctx, userID, epoch, hash)
}

// CR1 ("no session outlives a credential change"; a session is created only
// in a transaction that finds the epoch it was checked against, and a
// credential checked against an old password never overwrites a newer one).
// An operator runs `gatehouse users set-password` to lock out someone who
// knows the account's password; that person's password change on
// /auth/account, which checked the OLD password a moment before, must not
// overwrite the operator's password nor leave them a working session. The
// change used to write the hash unconditionally and start a session at
// whatever epoch it found afterwards, so the attacker's in-flight change won
// and the operator's lock-out was undone (found by an outside attack).
func TestAccountPasswordChangeDoesNotOverrideConcurrentAdminSetPassword(t *testing.T) {
	const operatorPassword = "operator chosen passphrase 7"
	const attackerPassword = "attacker chosen passphrase 9"
	wrapped := &adminBeforeWrite{}
	e := newTestEnv(t, func(c *Config) { wrapped.Store = c.Store.(storage.Store); c.Store = wrapped })
	u := e.CreateUser(t, "ann@example.com", testPassword)
	attacker := e.Login(t, "ann@example.com", testPassword)

	svc := &admin.Service{
		Store: e.Store,
		HashPassword: func(ctx context.Context, chosen, _ string) (string, error) {
			return e.Hasher.Hash(ctx, password.Normalize(chosen))
		},
	}
	wrapped.act = func(ctx context.Context) {
		if _, err := svc.SetPassword(ctx, "ann@example.com", operatorPassword); err != nil {
			t.Errorf("operator set-password: %v", err)
		}
	}

	resp := e.PostJSON("/auth/account/password", map[string]string{
		"current_password": testPassword, "password": attackerPassword, "confirm": attackerPassword}, attacker)
	fresh := e.SessionCookie(resp)
	if fresh != nil && fresh.Value != "" {
		if me := e.Get("/auth/me", fresh); me.StatusCode == http.StatusOK {
			t.Errorf("the password change checked against the old password got a working session after the operator's set-password (status %d)", resp.StatusCode)
		}
	}
	stored, err := e.Store.UserByID(t.Context(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := e.Hasher.Verify(t.Context(), stored.PasswordHash, password.Normalize(operatorPassword)); !ok {
		t.Error("the operator's password no longer works: a change verified against the old password overwrote it")
	}
}
