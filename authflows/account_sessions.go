package authflows

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// The account page's own sessions: the list (created, last seen, IP,
// browser), "sign out everywhere else", and the password change (current
// and new password; every other session is revoked and this browser gets a
// fresh session id).

var errWrongPassword = web.NewProblem(http.StatusBadRequest, "invalid_credentials", "The current password is wrong")

// accountSession is one row of the sessions list.
type accountSession struct {
	Created, LastSeen string
	IP                string
	Browser           string // "Firefox on Linux" (browserLabel)
	UserAgent         string // the header, neutralized (displayUserAgent)
	Current           bool
}

// accountSessions lists the user's active sessions, newest first.
func (h *accountFlow) accountSessions(r *http.Request, current storage.Session) ([]accountSession, error) {
	stored, err := h.store.SessionsOfUser(r.Context(), current.UserID)
	if err != nil {
		return nil, err
	}
	now := h.now()
	var rows []accountSession
	for _, s := range stored {
		if !s.Active(now, h.cfg.SessionIdleTTL) {
			continue
		}
		rows = append(rows, accountSession{
			Created:   sessionTime(s.CreatedAt),
			LastSeen:  sessionTime(s.LastSeen),
			IP:        s.IP,
			Browser:   browserLabel(s.UserAgent),
			UserAgent: displayUserAgent(s.UserAgent),
			Current:   s.IDHash == current.IDHash,
		})
	}
	return rows, nil
}

// signOutOthers is POST /auth/account/sessions/revoke-others: "sign out
// everywhere else". One store transaction deletes every other session and
// moves the credential epoch on, so that a sign-in under way makes no
// session after it either (CR1). JSON: 200 {"sessions_revoked":n}; form:
// 303 back.
func (h *accountFlow) signOutOthers(w http.ResponseWriter, r *http.Request) {
	s, ok := h.requireSession(w, r)
	if !ok {
		return
	}
	n, err := h.store.DeleteOtherSessions(r.Context(), s.UserID, s.IDHash)
	if errors.Is(err, storage.ErrNotFound) { // signed out meanwhile
		h.answerUnauthenticated(w, r)
		return
	}
	if err != nil {
		h.answerStoreFailure(w, r, fmt.Errorf("sign out elsewhere: %w", err))
		return
	}
	h.event(r, "sessions_revoked", slog.String("user_id", s.UserID), slog.Int("sessions_revoked", n), slog.String("source", "account"))
	h.recordAudit(r, audit.SessionsRevoked, s.UserID, s.Email, "")
	if web.WantsHTML(r) {
		seeOther(w, r, "/auth/account?done=signed_out")
		return
	}
	writeJSON(w, http.StatusOK, struct {
		SessionsRevoked int `json:"sessions_revoked"`
	}{n})
}

// changePassword is POST /auth/account/password with current_password,
// password and an optional confirm. The steps: the session; a per-IP
// throttle and the per-account failed-login budget (a stolen session must
// not become a password oracle); the current password checked; the new one
// judged by the password rules and hashed; the hash stored; every session
// of the user deleted and this browser given a new one. A user the access
// policy refuses (or a disabled one) changes nothing: 403.
func (h *accountFlow) changePassword(w http.ResponseWriter, r *http.Request) {
	s, ok := h.recentSession(w, r) // a sign-in within 10 minutes (twofactor_account.go)
	if !ok {
		return
	}
	ctx := r.Context()
	if !h.limits.passwordIP.allow(clientKey(h.cfg.ClientIP(r))) {
		h.passwordChangeFailed(w, r, s, errRateLimited)
		return
	}
	in, err := readInput(r, "current_password", "password", "confirm")
	if err != nil {
		h.passwordChangeFailed(w, r, s, problemFor(err))
		return
	}
	u, err := h.store.UserByID(ctx, s.UserID)
	if errors.Is(err, storage.ErrNotFound) { // deleted, with its sessions, meanwhile
		h.answerUnauthenticated(w, r)
		return
	}
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	// The change ends in a new session, a sign-in: one the access policy
	// would refuse changes nothing (AP2).
	if problem, reason := h.signInRefusal(u, u.Email, s.Groups); reason != "" {
		h.event(r, "password_change_failed", slog.String("user_id", u.ID), slog.String("reason", reason))
		h.recordAudit(r, audit.AccessDenied, u.ID, u.Email, "")
		h.passwordChangeFailed(w, r, s, problem)
		return
	}
	// The very bucket a sign-in of this browser to the account spends (the
	// account's, or its device cookie's: DV1), so that guesses here and at
	// the sign-in form share one budget.
	bucket, account := h.loginBucket(r, storage.NormalizeEmail(u.Email))
	if !bucket.allow(account) {
		h.passwordChangeFailed(w, r, s, errRateLimited)
		return
	}
	// The current password as sign-in reads it: NFKC (PW2), and never
	// hashed when too long to be one (DS2).
	current := password.Normalize(in["current_password"])
	if utf8.RuneCountInString(current) > password.MaxLength { // a failed guess, as at sign-in
		h.passwordChangeFailed(w, r, s, errWrongPassword)
		return
	}
	ok, _, err = h.hasher.Verify(ctx, u.PasswordHash, current)
	switch {
	case errors.Is(err, password.ErrBusy):
		bucket.refund(account)
		h.passwordChangeFailed(w, r, s, errBusy)
		return
	case err != nil:
		bucket.refund(account)
		h.answerStoreFailure(w, r, err)
		return
	case !ok || u.PasswordHash == "":
		h.event(r, "password_change_failed", slog.String("user_id", u.ID), slog.String("reason", "wrong current password"))
		h.passwordChangeFailed(w, r, s, errWrongPassword)
		return
	}
	bucket.refund(account)
	chosen, p, ok := h.newPassword(in, u.Email)
	if !ok {
		h.passwordChangeFailed(w, r, s, p)
		return
	}
	phc, err := h.hasher.Hash(ctx, chosen)
	if errors.Is(err, password.ErrBusy) {
		h.passwordChangeFailed(w, r, s, errBusy)
		return
	}
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	// A provider sign-in's grant goes to the new session (read now: the
	// change deletes this one).
	grant, err := h.grantOf(ctx, s)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	// Only if nothing changed the credentials since this browser's session
	// was made at its epoch (a reset, a revocation, a disable: CR1, even one
	// that landed while this request ran); the user's sessions and reset
	// tokens go with the old password, in the same transaction.
	u, revoked, err := h.store.ChangePassword(ctx, u.ID, s.Epoch, phc)
	if errors.Is(err, storage.ErrNotFound) { // deleted, with its sessions, meanwhile
		h.answerUnauthenticated(w, r)
		return
	}
	if err != nil {
		h.answerStoreFailure(w, r, fmt.Errorf("change password: %w", err))
		return
	}
	h.event(r, "password_changed", slog.String("user_id", u.ID), slog.Int("sessions_revoked", revoked))
	h.recordAudit(r, audit.PasswordChanged, u.ID, u.Email, "")
	h.mailPasswordNotice(r, u)
	// The same sign-in (its time, expiry, groups and factors), a new
	// session id, at the epoch this change made: refused if anything
	// changed the credentials since.
	if err := h.reissueSession(w, r, u, s, grant); err != nil {
		h.answerStoreFailure(w, r, fmt.Errorf("change password: new session: %w", err))
		return
	}
	if web.WantsHTML(r) {
		seeOther(w, r, "/auth/account?done=password")
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Status          string `json:"status"`
		SessionsRevoked int    `json:"sessions_revoked"`
	}{"password_changed", max(revoked-1, 0)})
}

// mailPasswordNotice queues the "your password was changed" mail, as a
// reset does (RS6): if it was not the owner, they learn of it. A failure
// is logged; the change stands.
func (h *accountFlow) mailPasswordNotice(r *http.Request, u storage.User) {
	_, err := h.store.EnqueueMail(r.Context(), storage.PasswordChangedJob(u, h.now(), true)) // this browser gets a new session below
	if err != nil {
		h.log.ErrorContext(r.Context(), "change password: queue notice mail", "user_id", u.ID, "err", err)
		return
	}
	h.cfg.WakeMailer()
}

// passwordChangeFailed answers a refused change: a problem, or for a
// browser the account page again with the reason.
func (h *accountFlow) passwordChangeFailed(w http.ResponseWriter, r *http.Request, s storage.Session, p web.Problem) {
	if !web.WantsHTML(r) {
		web.WriteProblem(w, r, p)
		return
	}
	msg := p.Title + "."
	if p.Detail != "" {
		msg = p.Detail
	}
	field := ""
	switch p.Code {
	case errWrongPassword.Code:
		field = "current_password"
	case errWeakPassword.Code, errPasswordMismatch.Code:
		field = "password"
	}
	h.renderAccount(w, r, s, p.Status, "", msg, field)
}

// accountNotice is the line shown after a change made on the page.
func accountNotice(done string) string {
	switch done {
	case "password":
		return "Your password was changed. Every other device was signed out."
	case "signed_out":
		return "Every other device was signed out."
	case "factor_added":
		return "The authenticator app was added."
	case "passkey_added":
		return "The passkey was added."
	case "factor_removed":
		return "The second factor was removed."
	}
	return ""
}

// sessionTime is how the page writes a time.
func sessionTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }
