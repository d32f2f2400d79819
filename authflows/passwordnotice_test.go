package authflows

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/admin"
	mailqueue "github.com/gatehouse-auth/gatehouse/authflows/mail"
	"github.com/gatehouse-auth/gatehouse/authflows/password"
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

// RS6: every path that changes a password queues the one notice job,
// storage.PasswordChangedJob, and nothing else: a change on the account
// page (its browser stays signed in), a reset, and an administrator's
// set-password. Each job renders, at delivery, to the notice that fits.
func TestPasswordChangeQueuesOneNoticeJob(t *testing.T) {
	const chosen = "a brand new passphrase"
	for _, tc := range []struct {
		name        string
		change      func(t *testing.T, e *testEnv, u storage.User)
		keptSession bool
		says        string
	}{
		{"account page", func(t *testing.T, e *testEnv, u storage.User) {
			resp := e.PostJSON("/auth/account/password", map[string]string{"current_password": testPassword, "password": chosen}, e.StartSession(t, u))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("change: %d %s", resp.StatusCode, e.Body(t, resp))
			}
		}, true, "Every other device that was signed in has been signed out."},
		{"reset", func(t *testing.T, e *testEnv, u storage.User) {
			resp := e.PostJSON("/auth/reset", map[string]string{"token": e.IssueResetToken(t, u), "password": chosen})
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("reset: %d %s", resp.StatusCode, e.Body(t, resp))
			}
		}, false, "Every device that was signed in has been signed out."},
		{"admin set-password", func(t *testing.T, e *testEnv, u storage.User) {
			svc := &admin.Service{Store: e.Store, Clock: e.Clock.Now, HashPassword: func(ctx context.Context, plain, _ string) (string, error) {
				return e.Hasher.Hash(ctx, password.Normalize(plain))
			}}
			if _, err := svc.SetPassword(t.Context(), u.Email, chosen); err != nil {
				t.Fatalf("set-password: %v", err)
			}
		}, false, "Every device that was signed in has been signed out."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			u := e.CreateUser(t, "ann@example.com", testPassword)
			at := e.Clock.Now()
			tc.change(t, e, u)

			queued, err := e.Store.DueMail(t.Context(), at, 10)
			if err != nil || len(queued) != 1 {
				t.Fatalf("queued after the change: %+v %v; want exactly the notice job", queued, err)
			}
			want := storage.PasswordChangedJob(u, at, tc.keptSession)
			want.ID = queued[0].ID
			if queued[0] != want {
				t.Errorf("queued %+v, want %+v", queued[0], want)
			}
			m, err := e.Handler.PrepareMail(t.Context(), queued[0])
			if err != nil {
				t.Fatal(err)
			}
			for _, part := range []string{m.Text, m.HTML} {
				if !strings.Contains(part, tc.says) || strings.Contains(part, chosen) {
					t.Errorf("notice does not say %q (or holds the password):\n%s", tc.says, part)
				}
			}
		})
	}
}
