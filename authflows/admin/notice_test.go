package admin

import (
	"testing"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// An administrator's set-password tells the owner by mail, as a change on
// the account page and a reset do: a job the server's mail queue renders
// at delivery (the CLI on a file has no templates nor base URL), never
// carrying the password.
func TestSetPasswordQueuesNotice(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	woken := 0
	f.svc.WakeMailer = func() { woken++ }
	u, err := f.svc.AddUser(ctx, AddUserRequest{Email: "ann@example.com", Password: "a long password"})
	if err != nil {
		t.Fatal(err)
	}
	if due, _ := f.store.DueMail(ctx, now, 10); len(due) != 0 {
		t.Fatalf("mail queued before the change: %+v", due)
	}
	if _, err := f.svc.SetPassword(ctx, u.Email, "a new long password"); err != nil {
		t.Fatal(err)
	}
	due, err := f.store.DueMail(ctx, now, 10)
	if err != nil || len(due) != 1 {
		t.Fatalf("queue after set-password: %+v %v", due, err)
	}
	want := storage.Mail{ID: due[0].ID, Kind: storage.MailKindPasswordChanged, UserID: u.ID, To: "ann@example.com", CreatedAt: now, NextAttempt: now}
	if due[0] != want {
		t.Errorf("queued %+v, want %+v", due[0], want)
	}
	if woken != 1 {
		t.Errorf("mailer woken %d times, want 1", woken)
	}
	// A refused password queues nothing.
	if _, err := f.svc.SetPassword(ctx, u.Email, "short"); err == nil {
		t.Fatal("weak password accepted")
	}
	if due, _ := f.store.DueMail(ctx, now, 10); len(due) != 1 {
		t.Errorf("a refused change queued mail: %+v", due)
	}
}
