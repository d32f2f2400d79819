package authflows

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// Mail jobs: the mail queue asks, before every delivery attempt, for the
// message a queued job stands for. A reset or an invitation mints its token
// then (reset.go, invite.go); the notice of a changed password is rendered
// here.

// PrepareMail turns a queued mail job into the message to send. The mail
// queue calls it before every delivery attempt (cmd/gatehouse passes it as
// mail.QueueOptions.Prepare), so no token is ever written to the queue.
//
// A job whose user no longer exists is storage.ErrNotFound (the queue drops
// it); a ready message is returned as it is.
func (h *Handler) PrepareMail(ctx context.Context, job storage.Mail) (storage.Mail, error) {
	switch job.Kind {
	case storage.MailKindMessage:
		return job, nil
	case storage.MailKindPasswordReset:
		return h.reset.prepareResetMail(ctx, job)
	case storage.MailKindInvite:
		return h.invite.prepareInvite(ctx, job)
	case storage.MailKindPasswordChanged:
		return h.notices.preparePasswordNotice(ctx, job)
	case storage.MailKindFactorChanged:
		return h.notices.prepareFactorNotice(ctx, job)
	default:
		return storage.Mail{}, fmt.Errorf("prepare mail: unknown kind %q", job.Kind)
	}
}

// noticeStore is what the password notice needs of the store.
type noticeStore interface {
	UserByID(ctx context.Context, id string) (storage.User, error)
}

// passwordNotices renders the notice jobs of every password change.
type passwordNotices struct {
	*core
	store noticeStore
}

// preparePasswordNotice renders the "your password was changed" mail
// (RS6) of a storage.PasswordChangedJob, queued by a reset, a change on the
// account page and `users set-password`: the time of the change (the job's
// CreatedAt), the forgot link, and that every device, or every other one
// when the changing browser stays signed in, was signed out.
func (h *passwordNotices) preparePasswordNotice(ctx context.Context, job storage.Mail) (storage.Mail, error) {
	u, err := h.store.UserByID(ctx, job.UserID)
	if err != nil {
		return storage.Mail{}, fmt.Errorf("prepare notice mail: look up user: %w", err)
	}
	m, err := h.renderPasswordNotice(u.Email, job.CreatedAt, h.now(), job.Subject == storage.PasswordChangedKeptSession)
	if err != nil {
		return storage.Mail{}, fmt.Errorf("prepare notice mail: %w", err)
	}
	m.ID, m.Kind, m.UserID, m.Attempts, m.NextAttempt = job.ID, job.Kind, job.UserID, job.Attempts, job.NextAttempt
	return m, nil
}

// renderPasswordNotice renders the "your password was changed" mail to
// email (RS6), for a change made at changed (keptDevice: the browser that
// made it stays signed in).
func (h *core) renderPasswordNotice(email string, changed, now time.Time, keptDevice bool) (storage.Mail, error) {
	return h.mails.render(mailPasswordChanged, email, mailData{
		Site:       h.cfg.AppName,
		Email:      email,
		Time:       changed.UTC().Format("Mon, 02 Jan 2006 15:04 MST"),
		ForgotURL:  h.absoluteURL("/auth/forgot", "", ""),
		KeptDevice: keptDevice,
	}, now)
}

// absoluteURL is {base-url}{path}?{key}={value}. Only Config.BaseURL counts:
// Host, X-Forwarded-Host and Forwarded never reach a mailed link (RT3).
func (h *core) absoluteURL(path, key, value string) string {
	u := *h.cfg.BaseURL
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawPath = ""
	u.RawQuery = ""
	if key != "" {
		u.RawQuery = key + "=" + value // value is URL-safe base64
	}
	u.Fragment = ""
	return u.String()
}

// factorChanges are the sentences of the second-factor notice, by change.
func factorChange(change string) string {
	switch change {
	case storage.FactorNoticeAdded:
		return "a second factor was added"
	case storage.FactorNoticeRemoved:
		return "a second factor was removed"
	case storage.FactorNoticeRecoveryCodes:
		return "new recovery codes were made and the old ones no longer work"
	case storage.FactorNoticeReset:
		return "an administrator removed every second factor"
	}
	return "the second factor changed"
}

// prepareFactorNotice renders the "your second factor changed" mail of a
// storage.FactorChangedJob: what changed and when, and the forgot link.
func (h *passwordNotices) prepareFactorNotice(ctx context.Context, job storage.Mail) (storage.Mail, error) {
	u, err := h.store.UserByID(ctx, job.UserID)
	if err != nil {
		return storage.Mail{}, fmt.Errorf("prepare factor notice: look up user: %w", err)
	}
	m, err := h.mails.render(mailFactorChanged, u.Email, mailData{
		Site:      h.cfg.AppName,
		Email:     u.Email,
		Time:      job.CreatedAt.UTC().Format("Mon, 02 Jan 2006 15:04 MST"),
		ForgotURL: h.absoluteURL("/auth/forgot", "", ""),
		Change:    factorChange(job.Subject),
	}, h.now())
	if err != nil {
		return storage.Mail{}, fmt.Errorf("prepare factor notice: %w", err)
	}
	m.ID, m.Kind, m.UserID, m.Attempts, m.NextAttempt = job.ID, job.Kind, job.UserID, job.Attempts, job.NextAttempt
	return m, nil
}
