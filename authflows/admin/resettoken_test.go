package admin

import (
	"errors"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// `users set-password` and `users disable` are what an administrator runs
// on an account taken over through its mailbox. A reset link the intruder
// holds stays valid through both: after set-password it replaces the
// administrator's password, after disable it sets one that works once the
// account is enabled. A completed reset voids the user's other tokens
// (RS3); so should these changes of the credential.
func TestSetPasswordAndDisableVoidResetTokens(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   func(f fixture, email string) error
	}{
		{"set-password", func(f fixture, email string) error {
			_, err := f.svc.SetPassword(t.Context(), email, "the admin's new password")
			return err
		}},
		{"disable", func(f fixture, email string) error {
			_, err := f.svc.SetDisabled(t.Context(), email, true)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			u, err := f.svc.AddUser(t.Context(), AddUserRequest{Email: "ann@example.com", Password: "a long password"})
			if err != nil {
				t.Fatal(err)
			}
			tok := storage.ResetToken{Hash: storage.HashSecret("intruder's link"), UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(30 * time.Minute)}
			if err := f.store.IssueResetToken(t.Context(), tok); err != nil {
				t.Fatal(err)
			}
			if err := tc.op(f, u.Email); err != nil {
				t.Fatal(err)
			}
			if _, err := f.store.ResetTokenUser(t.Context(), tok.Hash, now.Add(time.Minute)); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("after %s, a reset token issued before it is still valid (err %v)", tc.name, err)
			}
		})
	}
}
