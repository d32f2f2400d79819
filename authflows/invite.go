package authflows

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
	mailqueue "github.com/gatehouse-auth/gatehouse/authflows/mail"
	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// inviteFlow is the invitation link: its mail, its page, its form.
type inviteFlow struct {
	*core
	store  inviteStore
	second *twoFactorFlow // --second-factor=required: enrol before the session
}

// inviteStore is what the invitation flow needs of the store.
type inviteStore interface {
	UserByID(ctx context.Context, id string) (storage.User, error)
	IssueInviteToken(ctx context.Context, t storage.ResetToken) error
	InviteTokenUser(ctx context.Context, tokenHash storage.Hash, now time.Time) (storage.User, error)
	CompleteInvite(ctx context.Context, tokenHash storage.Hash, now time.Time, passwordHash string) (storage.User, error)
}

// Invitations: GET and POST /auth/invite.
//
// `gatehouse users add --invite` creates a password-less user and queues an
// invitation job. Like a reset, the token is minted only when the job is
// delivered (PrepareMail → prepareInvite), 256 random bits whose SHA-256 is
// stored as a token of its own kind (AD2): a reset token is no invitation
// and the other way round. Following the link renders a form (a GET never
// consumes the token); posting it sets the password, consumes the token and
// signs the user in.

var errInvalidInvite = web.NewProblem(http.StatusBadRequest, "invalid_token", "Invalid or expired invitation")

// prepareInvite mints the invite token of a queued invitation job and
// renders the mail with its link, valid --invite-ttl from now.
func (h *inviteFlow) prepareInvite(ctx context.Context, job storage.Mail) (storage.Mail, error) {
	u, err := h.store.UserByID(ctx, job.UserID)
	if err != nil {
		return storage.Mail{}, fmt.Errorf("prepare invitation: look up user: %w", err)
	}
	if u.Disabled || u.PasswordHash != "" { // disabled, or a password set, after the job was queued (AD2)
		return storage.Mail{}, fmt.Errorf("prepare invitation: user %s is disabled or has a password: %w", u.ID, mailqueue.ErrPermanent)
	}
	inviteToken := newSecret()
	now := h.now()
	m, err := h.mails.render(mailInvite, u.Email, mailData{
		Site:     h.cfg.AppName,
		Email:    u.Email,
		Link:     h.absoluteURL("/auth/invite", "token", inviteToken),
		Lifetime: humanDuration(h.cfg.InviteTTL),
	}, now)
	if err != nil {
		return storage.Mail{}, fmt.Errorf("prepare invitation: %w", err)
	}
	t := storage.ResetToken{Hash: storage.HashSecret(inviteToken), UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(h.cfg.InviteTTL)}
	if err := h.store.IssueInviteToken(ctx, t); err != nil {
		return storage.Mail{}, fmt.Errorf("prepare invitation: issue token: %w", err)
	}
	m.ID, m.Kind, m.UserID, m.Attempts, m.NextAttempt = job.ID, job.Kind, job.UserID, job.Attempts, job.NextAttempt
	return m, nil
}

// invitePage renders the form behind the mailed link without consuming the
// token; a used, expired or unknown token gets the 410 "link expired" page
// of an invitation. The form carries the account's email for password
// managers, and rd (from ?rd=, else the gatehouse_rd cookie of a forgot
// form in this browser) for after the invitation.
func (h *inviteFlow) invitePage(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Referrer-Policy", "no-referrer") // the token is in the URL
	web.NoStore(hdr)
	inviteToken := r.URL.Query().Get("token")
	rd := r.URL.Query().Get("rd")
	if rd == "" {
		rd = placeCookieValue(r, redirectCookie)
	}
	rd = h.redirectTarget(rd)
	f := resetForm{Token: inviteToken, MinLength: h.cfg.PasswordMinLength, Redirect: rd}
	if inviteToken == "" {
		h.renderLinkExpired(w, r, "invite", rd)
		return
	}
	u, err := h.store.InviteTokenUser(r.Context(), storage.HashSecret(inviteToken), h.now())
	if errors.Is(err, storage.ErrNotFound) || err == nil && u.Disabled {
		h.renderLinkExpired(w, r, "invite", rd)
		return
	}
	if err != nil {
		h.answerStoreFailure(w, r, fmt.Errorf("invite page: check token: %w", err))
		return
	}
	f.Email = u.Email
	h.render(w, r, http.StatusOK, "invite", f)
}

// acceptInvite sets the invited user's first password and signs them in:
// throttled per client IP like a reset; the token is checked before any
// hashing; the password rules apply; one store call consumes the token and
// sets the hash; then a new session.
func (h *inviteFlow) acceptInvite(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !h.limits.inviteIP.allow(clientKey(h.cfg.ClientIP(r))) {
		h.inviteFailed(w, r, errRateLimited, "throttled", resetForm{})
		return
	}
	in, err := readInput(r, "token", "password", "confirm", "rd")
	if err != nil {
		h.inviteFailed(w, r, problemFor(err), "invalid_request", resetForm{})
		return
	}
	inviteToken := in["token"]
	form := resetForm{Token: inviteToken, MinLength: h.cfg.PasswordMinLength, Redirect: h.redirectTarget(in["rd"])}
	tokenHash := storage.HashSecret(inviteToken)
	u, err := h.store.InviteTokenUser(ctx, tokenHash, h.now())
	if errors.Is(err, storage.ErrNotFound) || inviteToken == "" || err == nil && u.Disabled {
		h.inviteFailed(w, r, errInvalidInvite, "invalid_token", form)
		return
	}
	if err != nil {
		h.answerStoreFailure(w, r, fmt.Errorf("invite: check token: %w", err))
		return
	}
	form.Email = u.Email
	chosen, p, ok := h.newPassword(in, u.Email)
	if !ok {
		h.inviteFailed(w, r, p, p.Code, form)
		return
	}
	phc, err := h.hasher.Hash(ctx, chosen)
	if errors.Is(err, password.ErrBusy) {
		h.inviteFailed(w, r, errBusy, "busy", form)
		return
	}
	if err != nil {
		h.answerStoreFailure(w, r, fmt.Errorf("invite: hash password: %w", err))
		return
	}
	u, err = h.store.CompleteInvite(ctx, tokenHash, h.now(), phc)
	if errors.Is(err, storage.ErrNotFound) { // used or voided meanwhile
		h.inviteFailed(w, r, errInvalidInvite, "invalid_token", form)
		return
	}
	if err != nil {
		h.answerStoreFailure(w, r, fmt.Errorf("invite: complete: %w", err))
		return
	}
	h.event(r, "invite_accepted", slog.String("user_id", u.ID))
	h.recordAudit(r, audit.InviteAccepted, u.ID, u.Email, "")
	if problem, reason := h.signInRefusal(u, u.Email, ""); reason != "" {
		h.event(r, "login_refused", slog.String("user_id", u.ID), slog.String("reason", reason))
		h.recordAudit(r, audit.AccessDenied, u.ID, u.Email, "")
		web.WriteProblem(w, r, problem)
		return
	}
	if h.second.afterFirstFactor(w, r, u, methodPassword, "", form.Redirect, nil) {
		return
	}
	if err := h.startSession(w, r, u, methodPassword, ""); err != nil {
		h.answerStoreFailure(w, r, fmt.Errorf("invite: sign in: %w", err))
		return
	}
	h.recordAudit(r, audit.Login, u.ID, u.Email, "")
	if web.WantsHTML(r) {
		seeOther(w, r, form.Redirect)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Status string     `json:"status"`
		User   userAnswer `json:"user"`
	}{"invite_accepted", userAnswer{ID: u.ID, Email: u.Email}})
}

// inviteFailed logs a refused invitation and answers p: a browser gets the
// page again with the error tied to the password inputs, or for a used,
// expired or unknown token the 410 "link expired" page of an invitation (a
// JSON POST keeps 400 invalid_token).
func (h *inviteFlow) inviteFailed(w http.ResponseWriter, r *http.Request, p web.Problem, reason string, form resetForm) {
	h.event(r, "invite_failed", slog.String("reason", reason))
	h.tokenFormFailed(w, r, "invite", p, form)
}
