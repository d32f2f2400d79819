package admin

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// reset-second-factor, through the socket: every factor and recovery code
// of the user goes, an audit event factor_removed names the user, and a
// notice job is queued; another user's factors stay; an unknown email is
// not_found.
func TestResetSecondFactor(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	woken := 0
	f.svc.WakeMailer = func() { woken++ }
	client := viaSocket(t, f.svc)
	ann, err := f.svc.AddUser(ctx, AddUserRequest{Email: "ann@example.com", Password: "a long password"})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := f.svc.AddUser(ctx, AddUserRequest{Email: "bob@example.com", Password: "a long password"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{ann.ID, bob.ID} {
		factor := storage.TOTPFactor{ID: storage.NewFactorID(), UserID: id, Name: "Phone", Secret: []byte("12345678901234567890"),
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := f.store.AddPendingTOTP(ctx, factor); err != nil {
			t.Fatal(err)
		}
		if _, err := f.store.ConfirmTOTP(ctx, id, factor.ID, 1, now, []storage.Hash{storage.HashSecret("code")}); err != nil {
			t.Fatal(err)
		}
	}

	got, err := client.ResetSecondFactor(ctx, "Ann@Example.com")
	if err != nil || got.FactorsRemoved != 1 || got.User.ID != ann.ID {
		t.Fatalf("reset: %+v %v", got, err)
	}
	if have, err := f.store.SecondFactors(ctx, ann.ID); err != nil || have.Enrolled() || have.RecoveryCodesLeft != 0 {
		t.Errorf("ann's factors after the reset: %+v %v", have, err)
	}
	if have, err := f.store.SecondFactors(ctx, bob.ID); err != nil || !have.Enrolled() {
		t.Errorf("bob's factors: %+v %v", have, err)
	}
	if !strings.Contains(f.trail.String(), `"event":"factor_removed"`) || !strings.Contains(f.trail.String(), ann.ID) {
		t.Errorf("audit trail:\n%s", f.trail)
	}
	due, err := f.store.DueMail(ctx, now, 10)
	if err != nil || len(due) != 1 || due[0].Kind != storage.MailKindFactorChanged || due[0].UserID != ann.ID || due[0].Subject != storage.FactorNoticeReset {
		t.Errorf("queued %+v %v", due, err)
	}
	if woken != 1 {
		t.Errorf("mailer woken %d times", woken)
	}
	var refusal *Error
	if _, err := client.ResetSecondFactor(ctx, "nobody@example.com"); !errors.As(err, &refusal) || refusal.Code != CodeNotFound {
		t.Errorf("unknown user: %v", err)
	}
}
