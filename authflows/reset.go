package authflows

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/mail"
	"net/url"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
	mailqueue "github.com/gatehouse-auth/gatehouse/authflows/mail"
	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// resetFlow is forgot password and reset.
type resetFlow struct {
	*core
	store resetStore
}

// resetStore is what the reset flow needs of the store.
type resetStore interface {
	UserByID(ctx context.Context, id string) (storage.User, error)
	QueueResetRequest(ctx context.Context, email string, now time.Time) (storage.User, error)
	IssueResetToken(ctx context.Context, t storage.ResetToken) error
	ResetTokenUser(ctx context.Context, tokenHash storage.Hash, now time.Time) (storage.User, error)
	CompleteReset(ctx context.Context, tokenHash storage.Hash, now time.Time, passwordHash string, notice storage.Mail) (storage.User, int, error)
}

// Password reset: GET and POST /auth/forgot, GET and POST /auth/reset.
//
// A reset token is 256 random bits (RT1) mailed as a link built from the
// base URL only (RT3); the store keeps its SHA-256 and consumes it in the
// transaction that replaces the password (RT2, RS3). A request voids the
// user's tokens and queues a job that names the user and holds no secret,
// durably, before its 202; the token is minted when the mail queue delivers
// the job (PrepareMail), so it never reaches the database file in the
// clear, not even in a queued mail, and its lifetime counts from the
// delivery. Whether an email is registered never shows in the answer to
// /auth/forgot, in its timing or in its headers (FG1, FG2): every address
// costs the request the same one store call and one durable commit.
//
// Password-less accounts (OAuth only) get the reset mail too: following it
// gives them a password in addition to their providers. Their owner controls
// the stored address as much as anyone's, and the answer is the same anyway.

var (
	errInvalidToken     = web.NewProblem(http.StatusBadRequest, "invalid_token", "Invalid or expired reset token")
	errWeakPassword     = web.NewProblem(http.StatusBadRequest, "weak_password", "Password not accepted")
	errPasswordMismatch = web.NewProblem(http.StatusBadRequest, "password_mismatch", "The two passwords differ")
	errInvalidEmail     = web.NewProblem(http.StatusBadRequest, "invalid_request", "Enter a valid email address")
)

const (
	// maxEmailLength is the longest address a path can carry (RFC 5321).
	maxEmailLength = 254
)

// forgotForm is the forgot page: the form, or after an error the form again.
type forgotForm struct {
	Email    string
	Error    string
	Redirect string // rd, kept to the reset page in this browser
	LoginURL string // back to sign in, keeping rd
}

// forgotSent is the "check your mail" page, the same for every address.
type forgotSent struct{ Lifetime string }

// resetForm is the page behind the mailed link.
type resetForm struct {
	Token     string
	MinLength int
	Error     string
	Email     string // the account's address, for password managers
	Redirect  string // rd, kept through to the sign-in page
}

// linkExpired is the 410 page of a used, expired or unknown emailed link
// (pages/link_expired.html). Kind-specific words come from linkKinds, so
// that every kind of mailed link (reset, invite) shares the page.
type linkExpired struct {
	Title, What, Next string
	AskURL, AskText   string // the way to a new link; none when empty
	LoginURL          string
	Code              string
}

// linkKinds holds the words of the link-expired page per kind of link.
var linkKinds = map[string]linkExpired{
	"reset": {Title: "This reset link has expired", What: "password reset link",
		Next:   "Each link works once, for a limited time, and only the newest one you asked for. Ask for a new one: it takes a minute.",
		AskURL: "/auth/forgot", AskText: "Ask for a new link", Code: "invalid_token"},
	"invite": {Title: "This invitation has expired", What: "invitation link",
		Next: "Invitations work once and for a limited time. Ask the person who invited you to send a new one.",
		Code: "invalid_token"},
}

// renderLinkExpired answers 410 with the link-expired page of kind, keeping
// rd on its links.
func (h *core) renderLinkExpired(w http.ResponseWriter, r *http.Request, kind, rd string) {
	page := linkKinds[kind]
	if page.AskURL != "" {
		page.AskURL = h.withRedirect(page.AskURL, rd)
	}
	page.LoginURL = h.withRedirect("/auth/login", rd)
	w.Header().Set("Referrer-Policy", "no-referrer")
	web.NoStore(w.Header())
	h.render(w, r, http.StatusGone, "link_expired", page)
}

// forgotPage serves the forgot form, or with ?sent=1 the page every form
// post lands on, whether or not a mail was sent.
func (h *resetFlow) forgotPage(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("sent") != "" {
		h.render(w, r, http.StatusOK, "forgot_sent", forgotSent{Lifetime: humanDuration(h.cfg.ResetTokenTTL)})
		return
	}
	rd := h.redirectTarget(r.URL.Query().Get("rd"))
	h.render(w, r, http.StatusOK, "forgot", forgotForm{Redirect: rd, LoginURL: h.withRedirect("/auth/login", rd)})
}

// forgot asks for a reset mail. The steps:
//  1. the body is one string "email" (FG3), syntactically an address;
//  2. the client IP's bucket is checked: an empty one ends the request here,
//     silently (FG4);
//  3. the address's bucket is checked (FG4), keyed by the normalized
//     address so that no lookup comes first; then one store call, the same
//     for every address (FG2), looks the account up and queues its reset
//     job (the token is minted at delivery, see PrepareMail), durably before
//     the answer; a failed write is a 503, never a 202 for nothing;
//  4. the answer: 202 {"status":"accepted"}, or 303 to the "check your mail"
//     page for a form, byte for byte the same for every address (FG1).
//
// Nothing else on the account changes (FG5): no session, no password.
func (h *resetFlow) forgot(w http.ResponseWriter, r *http.Request) {
	in, err := readInput(r, "email", "rd")
	if err != nil {
		h.forgotRefused(w, r, problemFor(err), "", "")
		return
	}
	email, ok := validEmail(in["email"])
	if !ok {
		h.forgotRefused(w, r, errInvalidEmail, in["email"], in["rd"])
		return
	}
	if err := h.requestReset(r, email); err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	if web.WantsHTML(r) {
		// The same for every address (FG1): the rd cookie depends on the
		// form only.
		if rd := h.redirectTarget(in["rd"]); rd != "/" {
			http.SetCookie(w, h.placeCookie(redirectCookie, rd, "/auth/", h.cfg.ResetTokenTTL+time.Hour))
		}
		seeOther(w, r, "/auth/forgot?sent=1")
		return
	}
	writeJSON(w, http.StatusAccepted, struct {
		Status string `json:"status"`
	}{"accepted"})
}

func (h *resetFlow) forgotRefused(w http.ResponseWriter, r *http.Request, p web.Problem, email, rd string) {
	if web.WantsHTML(r) && p.Status < 500 {
		rd = h.redirectTarget(rd)
		h.render(w, r, p.Status, "forgot", forgotForm{Email: email, Error: p.Title + ".", Redirect: rd, LoginURL: h.withRedirect("/auth/login", rd)})
		return
	}
	web.WriteProblem(w, r, p)
}

// validEmail trims s and accepts one bare address (no display name, no list).
func validEmail(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > maxEmailLength {
		return "", false
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || strings.ContainsAny(s, " \t\r\n") {
		return "", false
	}
	return s, true
}

// requestReset checks the client IP's and the address's buckets (FG4) and
// makes the one store call of a reset request, the same for every address
// (FG2): it queues the account's reset job, or for an unknown address
// writes a marker of the same cost. The caller answers 202 only once it has
// returned: the request is then on disk and no crash loses it. A throttled
// request writes nothing; it is answered the same and not mailed. A failed
// write is an error: the caller answers 503, never a 202 that stands for
// nothing.
func (h *resetFlow) requestReset(r *http.Request, email string) error {
	if !h.limits.forgotIP.allow(clientKey(h.cfg.ClientIP(r))) {
		h.event(r, "forgot_throttled", slog.String("scope", "ip"))
		h.metrics.forgot.WithLabelValues("throttled").Inc()
		return nil
	}
	email = storage.NormalizeEmail(email)
	if !h.limits.forgotAccount.allow(loginAccountKey(email)) {
		h.event(r, "forgot_throttled", slog.String("scope", "account"))
		h.metrics.forgot.WithLabelValues("accepted").Inc() // the "throttled" label is the client IP's alone
		return nil
	}
	u, err := h.store.QueueResetRequest(r.Context(), email, h.now())
	if errors.Is(err, storage.ErrNotFound) {
		h.event(r, "forgot_requested", slog.Bool("known", false))
		h.metrics.forgot.WithLabelValues("accepted").Inc() // as a known one: no metric tells them apart (MX1)
		return nil
	}
	if err != nil {
		return fmt.Errorf("forgot: queue reset request: %w", err)
	}
	h.recordAudit(r, audit.ResetRequested, u.ID, u.Email, "")
	h.event(r, "forgot_requested", slog.Bool("known", true), slog.String("user_id", u.ID),
		slog.Bool("has_password", u.PasswordHash != ""))
	h.metrics.forgot.WithLabelValues("accepted").Inc()
	h.cfg.WakeMailer()
	return nil
}

// resetPage renders the form behind the mailed link. It never consumes the
// token (RT4: mail scanners open links); it only reads whether the token is
// still valid, to say so instead of showing a form that cannot work.
func (h *resetFlow) resetPage(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Referrer-Policy", "no-referrer") // RT5: the token is in the URL
	web.NoStore(hdr)
	resetToken := r.URL.Query().Get("token")
	rd := h.redirectTarget(placeCookieValue(r, redirectCookie))
	f := resetForm{Token: resetToken, MinLength: h.cfg.PasswordMinLength, Redirect: rd}
	if resetToken == "" {
		h.renderLinkExpired(w, r, "reset", rd)
		return
	}
	u, err := h.store.ResetTokenUser(r.Context(), storage.HashSecret(resetToken), h.now())
	if errors.Is(err, storage.ErrNotFound) {
		h.renderLinkExpired(w, r, "reset", rd)
		return
	} else if err != nil {
		h.answerStoreFailure(w, r, fmt.Errorf("reset page: check token: %w", err))
		return
	}
	f.Email = u.Email
	h.render(w, r, http.StatusOK, "reset", f)
}

// reset sets a new password with a reset token. The steps:
//  1. every attempt takes a token of the client IP's bucket (429);
//  2. the input is one string each of token, password and optional confirm;
//  3. the token is checked, before any hashing (RS2); unknown, used, expired
//     and superseded tokens get one answer (RS1);
//  4. the password rules (PW2, PW3); a refusal leaves the token usable (RS5);
//  5. the hash, behind the hashing semaphore (PW5);
//  6. one store call: token checked again and consumed, hash replaced, the
//     user's other tokens voided, every session deleted, the notice mail
//     queued (RS3, RS4, RS6); losing a race for the token is invalid_token;
//  7. 200 {"status":"password_reset"}, or 303 to the sign-in page for a
//     form. No new session: the caller's cookie is expired (RS4).
func (h *resetFlow) reset(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !h.limits.resetIP.allow(clientKey(h.cfg.ClientIP(r))) {
		h.resetFailed(w, r, errRateLimited, "throttled", resetForm{})
		return
	}
	in, err := readInput(r, "token", "password", "confirm", "rd")
	if err != nil {
		h.resetFailed(w, r, problemFor(err), "invalid_request", resetForm{})
		return
	}
	resetToken := in["token"]
	form := resetForm{Token: resetToken, MinLength: h.cfg.PasswordMinLength, Redirect: h.redirectTarget(in["rd"])}
	tokenHash := storage.HashSecret(resetToken)

	u, err := h.store.ResetTokenUser(ctx, tokenHash, h.now())
	if errors.Is(err, storage.ErrNotFound) || resetToken == "" {
		h.resetFailed(w, r, errInvalidToken, "invalid_token", form)
		return
	}
	if err != nil {
		h.answerStoreFailure(w, r, fmt.Errorf("reset: check token: %w", err))
		return
	}

	chosen, p, ok := h.newPassword(in, u.Email)
	if !ok {
		form.Email = u.Email
		h.resetFailed(w, r, p, p.Code, form)
		return
	}

	phc, err := h.hasher.Hash(ctx, chosen)
	if errors.Is(err, password.ErrBusy) {
		h.resetFailed(w, r, errBusy, "busy", form)
		return
	}
	if err != nil {
		h.answerStoreFailure(w, r, fmt.Errorf("reset: hash password: %w", err))
		return
	}

	now := h.now()
	u, revoked, err := h.store.CompleteReset(ctx, tokenHash, now, phc, storage.PasswordChangedJob(u, now, false))
	if errors.Is(err, storage.ErrNotFound) { // used or voided since step 3
		h.resetFailed(w, r, errInvalidToken, "invalid_token", form)
		return
	}
	if err != nil {
		h.answerStoreFailure(w, r, fmt.Errorf("reset: complete: %w", err))
		return
	}
	h.cfg.WakeMailer()
	h.event(r, "reset_completed", slog.String("user_id", u.ID), slog.Int("sessions_revoked", revoked))
	h.recordAudit(r, audit.ResetCompleted, u.ID, u.Email, "")
	h.metrics.resets.WithLabelValues("ok").Inc()
	h.metrics.revocations.Add(float64(revoked))

	if _, ok := h.sessionCookie(r); ok {
		h.expireCookie(w) // its session is gone with the others
	}
	clearSiteCache(w) // CS1: this browser's cached pages go too
	if web.WantsHTML(r) {
		// The sign-in page fills in the email and goes on to the page the
		// user wanted before "forgot".
		http.SetCookie(w, h.placeCookie(emailHintCookie, u.Email, "/auth/login", emailHintTTL))
		if _, err := r.Cookie(redirectCookie); err == nil {
			http.SetCookie(w, h.placeCookie(redirectCookie, "", "/auth/", -1))
		}
		next := "/auth/login?reset=1"
		if form.Redirect != "/" {
			next += "&rd=" + url.QueryEscape(form.Redirect)
		}
		seeOther(w, r, next)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Status string `json:"status"`
	}{"password_reset"})
}

// resetFailed logs and counts a refused reset and answers p. A browser that
// posted the form gets the reset page again, with the error above the form
// or, for a bad token, the 410 "link expired" page; other answers are
// problems (a JSON POST with a bad token keeps 400 invalid_token).
func (h *resetFlow) resetFailed(w http.ResponseWriter, r *http.Request, p web.Problem, reason string, form resetForm) {
	h.event(r, "reset_failed", slog.String("reason", reason))
	h.metrics.resets.WithLabelValues(reason).Inc()
	h.tokenFormFailed(w, r, "reset", p, form)
}

// prepareResetMail mints the token of a queued reset job (RT1), stores its
// hash with every older token of the user voided, in one store call (RT2),
// and renders the reset mail with the link (RT3) to the user's stored
// address (FG3). The token's lifetime counts from now, the delivery
// attempt, so a mail held up by a relay outage still gives the whole
// --reset-token-ttl. If the attempt fails, the next one calls it again and
// its fresh token voids this one: of the mails a user gets, only the link
// of the last one works.
func (h *resetFlow) prepareResetMail(ctx context.Context, job storage.Mail) (storage.Mail, error) {
	u, err := h.store.UserByID(ctx, job.UserID)
	if err != nil {
		return storage.Mail{}, fmt.Errorf("prepare reset mail: look up user: %w", err)
	}
	if u.Disabled { // disabled after the job was queued: no link goes out
		return storage.Mail{}, fmt.Errorf("prepare reset mail: user %s is disabled: %w", u.ID, mailqueue.ErrPermanent)
	}
	resetToken := newSecret()
	now := h.now()
	m, err := h.mails.render(mailReset, u.Email, mailData{
		Site:     h.cfg.AppName,
		Email:    u.Email,
		Link:     h.absoluteURL("/auth/reset", "token", resetToken),
		Lifetime: humanDuration(h.cfg.ResetTokenTTL),
	}, now)
	if err != nil {
		return storage.Mail{}, fmt.Errorf("prepare reset mail: %w", err)
	}
	t := storage.ResetToken{
		Hash:      storage.HashSecret(resetToken),
		UserID:    u.ID,
		CreatedAt: now,
		ExpiresAt: now.Add(h.cfg.ResetTokenTTL),
	}
	if err := h.store.IssueResetToken(ctx, t); err != nil {
		return storage.Mail{}, fmt.Errorf("prepare reset mail: issue token: %w", err)
	}
	// The message is new at every attempt (its Date and Message-ID follow
	// CreatedAt, now); the ID and Attempts stay the job's, for the queue's logs.
	m.ID, m.Kind, m.UserID, m.Attempts, m.NextAttempt = job.ID, job.Kind, job.UserID, job.Attempts, job.NextAttempt
	return m, nil
}
