package authflows

import (
	"errors"
	"strings"
	"testing"
	"time"

	mailqueue "github.com/gatehouse-auth/gatehouse/authflows/mail"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// The notice job an administrator's set-password queues is rendered at
// delivery from the server's templates: the change's time, the forgot
// link, and the truth that every device was signed out. A deleted user's
// job is dropped.
func TestPrepareAdminPasswordNotice(t *testing.T) {
	e := newTestEnv(t)
	u := e.CreateUser(t, "ann@example.com", testPassword)
	at := e.Clock.Now().Add(-2 * time.Minute)
	job := storage.Mail{ID: 7, Kind: storage.MailKindPasswordChanged, UserID: u.ID, To: u.Email, CreatedAt: at, NextAttempt: at}
	m, err := e.Handler.PrepareMail(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	if m.Kind != storage.MailKindPasswordChanged || m.ID != 7 || m.To != "ann@example.com" || !strings.Contains(m.Subject, "changed") {
		t.Errorf("prepared %+v", m)
	}
	for _, part := range []string{m.Text, m.HTML} {
		for _, want := range []string{"Every device that was signed in has been signed out.", testBaseURL + "/auth/forgot", at.UTC().Format("Mon, 02 Jan 2006 15:04 MST")} {
			if !strings.Contains(part, want) {
				t.Errorf("notice lacks %q:\n%s", want, part)
			}
		}
	}
	if err := e.Store.DeleteUser(t.Context(), u.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Handler.PrepareMail(t.Context(), job); !errors.Is(err, storage.ErrNotFound) && !errors.Is(err, mailqueue.ErrPermanent) {
		t.Errorf("notice for a deleted user: %v, want it dropped", err)
	}
}
