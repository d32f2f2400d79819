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
	"github.com/gatehouse-auth/gatehouse/storage"
)

// AD2 (storage.Store.SetUserDisabled: "voids every reset and invitation
// token of the user (enabling again revives none)") for an invitation not
// yet minted: `users add --invite` queues a job, and the token is minted
// when the job is delivered. An invitation still queued when the operator
// disables the account (an SMTP outage, a retry, or the few seconds before
// the mailer runs) must not be mailed after the disable, lest its link set
// the first password and sign in once the account is enabled again.
func TestInviteQueuedBeforeDisableStaysVoidAfterEnable(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.InviteTTL = 72 * time.Hour })
	svc := &admin.Service{Store: e.Store, Clock: e.Clock.Now}
	if _, err := svc.AddUser(t.Context(), admin.AddUserRequest{Email: "ivy@example.com", Invite: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SetDisabled(t.Context(), "ivy@example.com", true); err != nil {
		t.Fatal(err)
	}
	jobs, err := e.Store.DueMail(t.Context(), e.Clock.Now(), 10)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("queued jobs %+v, %v; want the invitation", jobs, err)
	}
	m, err := e.Handler.PrepareMail(t.Context(), jobs[0])
	if err != nil {
		if !errors.Is(err, storage.ErrNotFound) && !errors.Is(err, mailqueue.ErrPermanent) {
			t.Fatalf("PrepareMail of the invitation of a disabled account: %v, want a permanent failure (the queue drops the job)", err)
		}
		return // nothing minted, nothing mailed: the invitation died with the disable
	}
	t.Errorf("the invitation queued before the disable was prepared for the disabled account (mail to %s)", m.To)
	const prefix = testBaseURL + "/auth/invite?token="
	i := strings.Index(m.Text, prefix)
	if i < 0 {
		t.Fatalf("no invite link in:\n%s", m.Text)
	}
	token := strings.Fields(m.Text[i+len(prefix):])[0]

	if _, err := svc.SetDisabled(t.Context(), "ivy@example.com", false); err != nil {
		t.Fatal(err)
	}
	resp := e.PostJSON("/auth/invite", map[string]string{"token": token, "password": "an attacker's long passphrase"})
	if resp.StatusCode == http.StatusOK {
		t.Errorf("after enable, the invitation mailed while the account was disabled sets its password and signs in (cookie set: %v)",
			e.SessionCookie(resp) != nil)
	}
}

// disableBeforeIssue disables the user just before the reset token of a
// delivery is stored: PrepareMail has read the user (enabled) and rendered
// the mail, the operator's `users disable` commits, then IssueResetToken.
type disableBeforeIssue struct {
	Store
	under storage.Store
}

func (s disableBeforeIssue) IssueResetToken(ctx context.Context, t storage.ResetToken) error {
	if _, err := s.under.SetUserDisabled(ctx, t.UserID, true); err != nil {
		return err
	}
	return s.Store.IssueResetToken(ctx, t)
}

// The reset job has the check prepareInvite lacks, but outside the store's
// transaction: a disable that lands between PrepareMail's UserByID and
// IssueResetToken leaves a token stored for the disabled user (the store
// does not refuse to issue one), the mail goes out, and after `users
// enable` that link resets the password. SetUserDisabled promises that
// enabling revives no token; the store should refuse to issue a token to a
// disabled user in the transaction that stores it.
func TestResetTokenIssuedDuringDisableStaysVoidAfterEnable(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.Store = disableBeforeIssue{c.Store, c.Store.(storage.Store)} })
	u := e.CreateUser(t, "ann@example.com", oldPassword)
	job := storage.Mail{Kind: storage.MailKindPasswordReset, UserID: u.ID, To: u.Email}
	m, err := e.Handler.PrepareMail(t.Context(), job)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) || errors.Is(err, mailqueue.ErrPermanent) {
			return // refused in the store's transaction: nothing minted, nothing mailed
		}
		t.Fatalf("PrepareMail: %v", err)
	}
	t.Errorf("a reset link was minted and mailed to %s for an account disabled before the token was stored", m.To)
	_, token := resetLink(t, mailed{Text: m.Text, HTML: m.HTML})
	if _, err := e.Store.SetUserDisabled(t.Context(), u.ID, false); err != nil {
		t.Fatal(err)
	}
	if e.ResetTokenValid(t, token) {
		t.Error("after enable, the reset link minted while the account was being disabled is valid")
	}
}
