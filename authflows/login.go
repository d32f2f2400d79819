package authflows

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"unicode/utf8"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// signInFlow is password sign-in and sign-out, and /auth/me.
type signInFlow struct {
	*core
	store  signInStore
	second *twoFactorFlow // a user with a second factor steps through /auth/2fa
}

// signInStore is what the sign-in flow needs of the store.
type signInStore interface {
	UserByEmail(ctx context.Context, email string) (storage.User, error)
	UserByID(ctx context.Context, id string) (storage.User, error)
	IdentitiesOfUser(ctx context.Context, userID string) ([]storage.Identity, error)
	Session(ctx context.Context, idHash storage.Hash) (storage.Session, error)
	DeleteSession(ctx context.Context, idHash storage.Hash) error
	passwordUpgrader
}

// Password sign-in: GET and POST /auth/login, POST /auth/logout, GET /auth/me.

var (
	// errInvalidCredentials is the one answer for an unknown email, a wrong
	// password, a password-less account and an oversized password (PW4).
	errInvalidCredentials = web.NewProblem(http.StatusUnauthorized, "invalid_credentials", "Wrong email or password")
	errMissingCredentials = web.NewProblem(http.StatusBadRequest, "invalid_request", "Enter your email and password")
	errPasswordSignInOff  = web.NewProblem(http.StatusForbidden, "password_sign_in_off", "Sign-in with a password is off here; sign in with a provider")
)

// loginForm is what the sign-in page shows.
type loginForm struct {
	Redirect string // validated local path or allowed absolute URL, kept through a hidden field
	Email    string // as typed, after a failed attempt
	Notice   string
	Error    string
	// FieldsInvalid marks the email and password inputs invalid: the
	// refusal was about what was typed (wrong or missing), not a policy,
	// a disabled account or a busy server.
	FieldsInvalid bool
	Providers     []providerLink // one button per configured provider
	// ProvidersOnly hides the password form: only the provider buttons
	// (Config.ProvidersOnly, with a provider configured).
	ProvidersOnly bool
	ForgotURL     string // the forgot page, keeping rd

	// SignedInAs is the email of a browser that is already signed in: the
	// page offers "continue" (to rd) and "sign out" instead of the form.
	SignedInAs string
	LoginURL   string // where "sign out" leads: this page, signed out
	// ClearCache loads clearCacheAsset: the page follows a sign-out or a
	// completed reset (CS1).
	ClearCache bool
	// Passkeys offers "Sign in with a passkey" (passkeys are on).
	Passkeys bool
	// Reauth asks a signed-in user to sign in again (?reauth=max-age):
	// the form is shown instead of "continue".
	Reauth bool
}

// newLoginForm returns the sign-in page for rd.
func (h *signInFlow) newLoginForm(rd string) loginForm {
	f := loginForm{Redirect: h.redirectTarget(rd), Providers: h.providerLinks(), ForgotURL: h.withRedirect("/auth/forgot", rd),
		Passkeys: h.second.passkeys != nil}
	f.ProvidersOnly = h.cfg.ProvidersOnly && len(f.Providers) > 0
	return f
}

// loginPage serves the sign-in page: the form, with a notice of what just
// happened (?notice=, ?reset=1 after a reset) and the email filled in after
// a reset; or, for a browser that is signed in already, who it is with
// "continue" and "sign out".
func (h *signInFlow) loginPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := h.newLoginForm(q.Get("rd"))
	f.Notice = noticeOf(q)
	if s, err := h.currentSession(r); err == nil {
		if h.second.reauth(w, r, s, q.Get("reauth"), f.Redirect) {
			return
		}
		if q.Get("reauth") != "" { // max-age, or a second factor reauth could not add
			f.Reauth, f.Email = true, s.Email
			f.Notice = "Sign in again to continue."
			h.render(w, r, http.StatusOK, "login", f)
			return
		}
		f.SignedInAs = s.Email
		f.LoginURL = withNotice(h.withRedirect("/auth/login", f.Redirect), "signed_out")
		h.render(w, r, http.StatusOK, "login", f)
		return
	}
	f.Email = placeCookieValue(r, emailHintCookie)
	switch {
	case q.Get("reset") == "1" || q.Get("notice") == "password_reset":
		f.ClearCache = true
	case h.justSignedOut(w, r):
		if f.Notice == "" {
			f.Notice = notices["signed_out"]
		}
		f.ClearCache = true
	}
	h.render(w, r, http.StatusOK, "login", f)
}

// login checks an email and a password and starts a session. The steps:
//  1. every attempt takes a token of the client IP's bucket;
//  2. the input is one string each of email, password and optional rd;
//  3. every attempt takes a token of the account's failure bucket before any
//     hashing, so that concurrent guesses cannot outrun the bucket; an empty
//     bucket refuses the attempt; a browser with a valid device cookie for
//     the account uses that cookie's bucket instead (DV1);
//  4. exactly one argon2 verification runs, against the stored hash or a
//     dummy one, so unknown, password-less and known accounts look alike (PW4);
//     an oversized password is refused before hashing (DS2);
//  5. only a failure keeps the account's token: success, a busy hasher and a
//     store error give it back;
//  6. success: hash upgraded if its parameters are old (PW1);
//  7. a disabled account gets 403 account_disabled, one the access policy
//     refuses 403 access_denied, and no session;
//  8. a user with a second factor, or who must enrol one, gets the
//     second-factor step instead of a session (twofactor.go);
//  9. a new session (SS4), a device cookie for the account (DV1), 200 with
//     the user, or 303 to rd for a form.
func (h *signInFlow) login(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	form := h.newLoginForm("")
	if form.ProvidersOnly {
		h.loginRefused(w, r, errPasswordSignInOff, form)
		return
	}

	if !h.limits.loginIP.allow(clientKey(h.cfg.ClientIP(r))) {
		h.event(r, "login_throttled", slog.String("scope", "ip"))
		h.metrics.logins.WithLabelValues("throttled").Inc()
		h.loginRefused(w, r, errRateLimited, form)
		return
	}

	in, err := readInput(r, "email", "password", "rd")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	form = h.newLoginForm(in["rd"])
	form.Email = in["email"]
	email := storage.NormalizeEmail(in["email"])
	typed := password.Normalize(in["password"])
	if email == "" || typed == "" {
		h.loginRefused(w, r, errMissingCredentials, form)
		return
	}

	bucket, account := h.loginBucket(r, email) // a device cookie's own bucket, or the account's (DV1)
	if !bucket.allow(account) {
		h.event(r, "login_throttled", slog.String("scope", "account"), slog.String("email", logEmail(email)))
		h.metrics.logins.WithLabelValues("throttled").Inc()
		h.loginRefused(w, r, errRateLimited, form)
		return
	}

	u, ok, err := h.verifyLogin(ctx, email, typed)
	if err != nil || ok {
		bucket.refund(account)
	}
	switch {
	case errors.Is(err, password.ErrBusy):
		h.event(r, "login_busy")
		h.metrics.logins.WithLabelValues("busy").Inc()
		h.loginRefused(w, r, errBusy, form)
		return
	case err != nil:
		h.log.ErrorContext(ctx, "login failed", "err", err)
		h.metrics.logins.WithLabelValues("error").Inc()
		h.loginRefused(w, r, errStoreUnavailable, form)
		return
	case !ok:
		attrs := []slog.Attr{slog.String("email", logEmail(email))}
		if u.ID != "" { // a known account; the answer does not say so (PW4)
			attrs = append(attrs, slog.String("user_id", u.ID))
		}
		h.event(r, "login_failed", attrs...)
		h.recordAudit(r, audit.LoginFailed, u.ID, logEmail(email), "")
		h.metrics.logins.WithLabelValues("failed").Inc()
		h.loginRefused(w, r, errInvalidCredentials, form)
		return
	}

	// 7. The account must be enabled and pass the access policy; the
	// credentials checked out, so saying so reveals nothing.
	if p, reason := h.signInRefusal(u, u.Email, ""); reason != "" {
		h.event(r, "login_refused", slog.String("user_id", u.ID), slog.String("reason", reason))
		h.recordAudit(r, audit.AccessDenied, u.ID, u.Email, "")
		h.metrics.logins.WithLabelValues("refused").Inc()
		h.loginRefused(w, r, p, form)
		return
	}

	// 8. A user with a second factor (or who must enrol one) gets the
	// step, no session (twofactor.go).
	if h.second.afterFirstFactor(w, r, u, methodPassword, "", form.Redirect, nil) {
		return
	}

	// 9. The session, only if the credentials did not change since they
	// were checked (CR1): a reset, password change or revocation in
	// between makes the password no longer sign in; a disable answers
	// account_disabled (AP2).
	if err := h.startSession(w, r, u, methodPassword, ""); errors.Is(err, storage.ErrCredentialsChanged) {
		if now, lookupErr := h.store.UserByID(ctx, u.ID); lookupErr == nil && now.Disabled {
			h.event(r, "login_refused", slog.String("user_id", u.ID), slog.String("reason", "account disabled"))
			h.metrics.logins.WithLabelValues("refused").Inc()
			h.loginRefused(w, r, web.AccountDisabled, form)
			return
		}
		h.event(r, "login_failed", slog.String("user_id", u.ID), slog.String("reason", "credentials changed"))
		h.metrics.logins.WithLabelValues("failed").Inc()
		h.loginRefused(w, r, errInvalidCredentials, form)
		return
	} else if err != nil {
		h.log.ErrorContext(ctx, "login failed", "user_id", u.ID, "err", err)
		h.metrics.logins.WithLabelValues("error").Inc()
		h.loginRefused(w, r, errStoreUnavailable, form)
		return
	}
	h.event(r, "login_ok", slog.String("user_id", u.ID))
	h.recordAudit(r, audit.Login, u.ID, u.Email, "")
	h.metrics.logins.WithLabelValues("ok").Inc()
	if _, err := r.Cookie(emailHintCookie); err == nil {
		http.SetCookie(w, h.placeCookie(emailHintCookie, "", "/auth/login", -1))
	}
	if web.WantsHTML(r) {
		seeOther(w, r, form.Redirect)
		return
	}
	writeJSON(w, http.StatusOK, map[string]userAnswer{"user": {ID: u.ID, Email: u.Email}})
}

// userAnswer is the user as POST /auth/login reports it.
type userAnswer struct {
	ID    string `json:"id"`
	Email string `json:"email"`
}

// verifyLogin reports whether typed is the password of the account email,
// and returns the account when there is one (for the log only when ok is
// false). A password longer than password.MaxLength is refused without
// hashing (DS2); otherwise exactly one Verify runs, with the dummy hash when
// the account is unknown or has no password (PW4). Errors:
// password.ErrBusy, or a store failure.
func (h *signInFlow) verifyLogin(ctx context.Context, email, typed string) (storage.User, bool, error) {
	if utf8.RuneCountInString(typed) > password.MaxLength {
		return storage.User{}, false, nil
	}
	u, err := h.store.UserByEmail(ctx, email)
	if errors.Is(err, storage.ErrNotFound) {
		u = storage.User{}
	} else if err != nil {
		return storage.User{}, false, err
	}
	ok, needsRehash, err := h.hasher.Verify(ctx, u.PasswordHash, typed)
	if err != nil {
		return storage.User{}, false, err
	}
	if !ok {
		return u, false, nil
	}
	if needsRehash {
		h.upgradePasswordHash(ctx, u, typed)
	}
	return u, true, nil
}

// passwordUpgrader is the compare-and-swap of a password hash, offered by a
// store that keeps credential epochs (PostgreSQL).
type passwordUpgrader interface {
	UpgradePasswordHash(ctx context.Context, userID, oldHash, newHash string) error
}

// upgradePasswordHash re-hashes a verified password with the current
// parameters (PW1). It is best effort: a failure only leaves the old hash.
// The store swaps the hash only if it is still the one verified, so a
// password reset completed meanwhile is never overwritten by the old password.
func (h *signInFlow) upgradePasswordHash(ctx context.Context, u storage.User, typed string) {
	hash, err := h.hasher.Hash(ctx, typed)
	if err != nil {
		h.log.WarnContext(ctx, "password hash upgrade skipped", "user_id", u.ID, "err", err)
		return
	}
	err = h.store.UpgradePasswordHash(ctx, u.ID, u.PasswordHash, hash)
	if errors.Is(err, storage.ErrCredentialsChanged) || errors.Is(err, storage.ErrNotFound) {
		return // changed meanwhile: the newer hash stays
	}
	if err != nil {
		h.log.WarnContext(ctx, "password hash upgrade failed", "user_id", u.ID, "err", err)
		return
	}
	h.log.InfoContext(ctx, "password hash upgraded", "user_id", u.ID)
}

// loginRefused answers a failed sign-in: the sign-in page again with the
// problem's status and title for browsers, the problem itself otherwise.
func (h *signInFlow) loginRefused(w http.ResponseWriter, r *http.Request, p web.Problem, form loginForm) {
	if !web.WantsHTML(r) {
		web.WriteProblem(w, r, p)
		return
	}
	form.Error = p.Title + "."
	form.FieldsInvalid = p.Code == errInvalidCredentials.Code || p.Code == errMissingCredentials.Code
	if p.Code == errRateLimited.Code {
		form.Error += " Wait a few minutes, or ask for a reset link."
	}
	h.render(w, r, p.Status, "login", form)
}

// loginAccountKey is the per-account throttling key: the hash of the
// normalized email, so that a flood of long addresses keeps keys small.
func loginAccountKey(email string) string {
	sum := storage.HashSecret(email)
	return string(sum[:])
}

// notAnAddress stands in a log line for what was typed as the email when
// it is not an address.
const notAnAddress = "(not an address)"

// logEmail is a user-supplied email as a log line and the audit trail may
// hold it: only a plain address (storage.ValidAddress, at most 254 bytes)
// is written as typed. Anything else is notAnAddress, because what people
// type into the email field by mistake is most often their password (LG1).
func logEmail(email string) string {
	if !storage.ValidAddress(email) {
		return notAnAddress
	}
	return email
}

// logout deletes the request's session and expires the cookie (SS6). It
// answers 204 (a form: 303 to a local rd, else to the sign-in page, which
// clears the cache again and says "signed out") with or without a session,
// and tells the browser to drop its cache of the site (CS1).
func (h *signInFlow) logout(w http.ResponseWriter, r *http.Request) {
	h.expireCookie(w)
	h.endUnprefixedSession(w, r)
	clearSiteCache(w)
	endAt := "" // --oidc-logout: the OpenID Provider's end of session (oidclogout.go)
	if sessionID, ok := h.sessionCookie(r); ok {
		idHash := storage.HashSecret(sessionID)
		s, err := h.store.Session(r.Context(), idHash)
		if err == nil {
			endAt = h.providerLogoutURL(r.Context(), s)
			err = h.store.DeleteSession(r.Context(), idHash)
		}
		switch {
		case err == nil:
			if h.gate.Gone != nil {
				h.gate.Gone(idHash) // its cached assertion goes with it
			}
			h.event(r, "logout", slog.String("user_id", s.UserID))
			h.recordAudit(r, audit.Logout, s.UserID, s.Email, "")
		case !errors.Is(err, storage.ErrNotFound):
			// The cookie is gone from this browser, but the session may
			// still work elsewhere: say so rather than pretend.
			h.log.ErrorContext(r.Context(), "logout failed", "err", err)
			web.WriteProblem(w, r, errStoreUnavailable)
			return
		}
	}
	if endAt != "" && web.WantsHTML(r) {
		h.markSignedOut(w)
		seeOther(w, r, endAt)
		return
	}
	if endAt != "" {
		writeJSON(w, http.StatusOK, struct {
			EndSessionURL string `json:"end_session_url"`
		}{endAt})
		return
	}
	if web.WantsHTML(r) {
		// The contract's address exactly; the sign-in page clears the
		// cache and says "signed out" from a one-minute marker cookie.
		next := "/auth/login"
		h.markSignedOut(w)
		if in, err := readInput(r, "rd"); err == nil && in["rd"] != "" && localRedirect(in["rd"]) == in["rd"] {
			next = in["rd"]
		}
		seeOther(w, r, next)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// meAnswer is GET /auth/me.
type meAnswer struct {
	ID          string           `json:"id"`
	Email       string           `json:"email"`
	HasPassword bool             `json:"has_password"`
	Identities  []identityAnswer `json:"identities"` // never null
}

type identityAnswer struct {
	Provider string `json:"provider"`
	Subject  string `json:"subject"`
	Email    string `json:"email"`
}

// me reports the signed-in user, or 401 unauthenticated.
func (h *signInFlow) me(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	// Not requireSession: /auth/me answers 401 in both modes, never a redirect.
	s, err := h.currentSession(r)
	switch {
	case errors.Is(err, errNoSession):
		h.answerUnauthenticated(w, r)
		return
	case err != nil:
		h.answerStoreFailure(w, r, err)
		return
	}
	u, err := h.store.UserByID(ctx, s.UserID)
	if errors.Is(err, storage.ErrNotFound) {
		h.answerUnauthenticated(w, r)
		return
	}
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	identities, err := h.store.IdentitiesOfUser(ctx, u.ID)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	answer := meAnswer{ID: u.ID, Email: u.Email, HasPassword: u.PasswordHash != "", Identities: make([]identityAnswer, 0, len(identities))}
	for _, id := range identities {
		answer.Identities = append(answer.Identities, identityAnswer{Provider: id.Provider, Subject: id.Subject, Email: id.Email})
	}
	writeJSON(w, http.StatusOK, answer)
}
