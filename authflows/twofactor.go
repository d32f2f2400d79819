package authflows

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"slices"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
	"github.com/gatehouse-auth/gatehouse/authflows/secondfactor"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// The second factor (twoFactorFlow): the step between a first factor and
// the session at /auth/2fa (this file), the account's factor endpoints
// (twofactor_account.go) and passkeys (twofactor_passkey.go). The rules of
// codes, recovery codes and WebAuthn ceremonies live in
// authflows/secondfactor; this flow maps them to answers.

// SecondFactorPolicy is --second-factor: who must give a second factor.
type SecondFactorPolicy string

const (
	// SecondFactorOptional: users may enrol one; those who did must give it.
	SecondFactorOptional SecondFactorPolicy = "optional"
	// SecondFactorRequired: a password sign-in of a user without a second
	// factor must enrol one before any session exists.
	SecondFactorRequired SecondFactorPolicy = "required"
	// SecondFactorRequiredAll: provider sign-ins too.
	SecondFactorRequiredAll SecondFactorPolicy = "required-all"
)

// PasskeysPossible reports whether passkeys can be offered for the base
// URL: with an explicit relying-party id, or a base URL whose host is a
// name (an IP address cannot be a WebAuthn relying party).
func PasskeysPossible(base *url.URL, rpID string) bool {
	if rpID != "" {
		return true
	}
	_, err := netip.ParseAddr(base.Hostname())
	return err != nil
}

// twoFactorStore is what the second-factor flow needs of the store.
type twoFactorStore interface {
	secondfactor.Store
	secondfactor.PasskeyStore
	UserByID(ctx context.Context, id string) (storage.User, error)
	RemoveFactor(ctx context.Context, userID, factorID string) error
	EnqueueMail(ctx context.Context, m storage.Mail) (uint64, error)
}

// twoFactorFlow is the second factor: the step at /auth/2fa, the account's
// factors and passkeys.
type twoFactorFlow struct {
	*core
	store    twoFactorStore
	factors  *secondfactor.Factors
	passkeys *secondfactor.Passkeys // nil: passkeys are off
}

// newTwoFactorFlow builds the flow; passkeys are off when the base URL's
// host cannot be a relying party and no --webauthn-rp-id names one.
func newTwoFactorFlow(c *core, store twoFactorStore) (*twoFactorFlow, error) {
	f := &twoFactorFlow{core: c, store: store, factors: secondfactor.New(store, secondfactor.Config{Issuer: c.cfg.AppName, Now: c.now})}
	if !PasskeysPossible(c.cfg.BaseURL, c.cfg.WebAuthnRPID) {
		return f, nil
	}
	var err error
	f.passkeys, err = secondfactor.NewPasskeys(store, secondfactor.PasskeyConfig{
		BaseURL: c.cfg.BaseURL.String(), RPID: c.cfg.WebAuthnRPID, RPName: c.cfg.AppName, Now: c.now,
	})
	if err != nil {
		return nil, fmt.Errorf("authflows: %w", err)
	}
	return f, nil
}

var (
	errInvalidCode  = web.NewProblem(http.StatusUnauthorized, "invalid_code", "Wrong or used code")
	errStepExpired  = web.NewProblem(http.StatusUnauthorized, "step_expired", "This sign-in took too long or was finished already, sign in again")
	errReauthNeeded = web.NewProblem(http.StatusUnauthorized, "reauthentication_required", "Sign in again to change this")
	errEnrolled     = web.NewProblem(http.StatusConflict, "enrolled", "You have a second factor already: give it")
)

// The step cookie binds the second-factor step to the browser that gave
// the first factor: HttpOnly, as long as the step lives. With Secure
// cookies it is secureStepCookieName, a __Host- cookie (Path=/, no Domain)
// that a sibling host cannot plant (CK1), which the proxy keeps from the
// upstream (SS8); without, it is scoped to /auth/.
const (
	stepCookieName       = "gatehouse_2fa"
	secureStepCookieName = "__Host-" + stepCookieName
)

// StepCookieName is the second-factor step cookie's name, for the proxy to
// strip: secure says whether cookies are Secure.
func StepCookieName(secure bool) string {
	if secure {
		return secureStepCookieName
	}
	return stepCookieName
}

func (h *twoFactorFlow) stepCookieAt() (name, path string) {
	if h.cfg.CookieSecure {
		return secureStepCookieName, "/"
	}
	return stepCookieName, "/auth/"
}

func (h *twoFactorFlow) setStepCookie(w http.ResponseWriter, value string) {
	name, path := h.stepCookieAt()
	http.SetCookie(w, h.placeCookie(name, value, path, secondfactor.DefaultStepTTL))
}

func (h *twoFactorFlow) clearStepCookie(w http.ResponseWriter) {
	name, path := h.stepCookieAt()
	http.SetCookie(w, h.placeCookie(name, "", path, -1))
}

func (h *twoFactorFlow) stepCookie(r *http.Request) string {
	name, _ := h.stepCookieAt()
	return placeCookieValue(r, name)
}

// mustEnrol reports whether a first factor of method, for a user without
// a second factor, must enrol one before a session is made.
func (h *twoFactorFlow) mustEnrol(method string) bool {
	switch h.cfg.SecondFactor {
	case SecondFactorRequired:
		return method == methodPassword
	case SecondFactorRequiredAll:
		return true
	}
	return false
}

// stepAnswer is POST /auth/login's answer for a user who must give (or,
// under --second-factor=required, enrol) a second factor.
type stepAnswer struct {
	SecondFactorRequired bool     `json:"second_factor_required"`
	Methods              []string `json:"methods"`
	// EnrolmentRequired: the user has no second factor and must enrol one
	// at /auth/2fa before any session exists.
	EnrolmentRequired bool `json:"enrolment_required,omitempty"`
}

// afterFirstFactor (MF1) is called once a first factor checked out for u and
// the sign-in passed every other rule, before any session is made. A
// password (and, under --second-factor=required-all, a provider sign-in)
// of a user who has a second factor, or must enrol one, begins the step
// (the step cookie) and answers: 200 with the methods, or a 303 to
// /auth/2fa for a form; answered is then true and the caller makes no
// session. Otherwise it answers nothing and the caller signs in.
//
// grant is a provider sign-in's (nil for a password): the step keeps it
// for the session it makes.
func (h *twoFactorFlow) afterFirstFactor(w http.ResponseWriter, r *http.Request, u storage.User, method, groups, rd string, grant *storage.Grant) (answered bool) {
	if method != methodPassword && h.cfg.SecondFactor != SecondFactorRequiredAll {
		return false // a provider sign-in steps only under required-all
	}
	have, err := h.store.SecondFactors(r.Context(), u.ID)
	if err != nil {
		h.answerStoreFailure(w, r, fmt.Errorf("second factor: %w", err))
		return true
	}
	// Whether to step is the user's factors' say, not what can be given
	// here: a passkey while passkeys are off still counts, and its user
	// cannot finish the step (an administrator resets the factor).
	enrol := !have.Enrolled() && h.mustEnrol(method)
	if !have.Enrolled() && !enrol {
		return false
	}
	methods := h.methods(have)
	binding, err := h.factors.BeginStep(r.Context(), secondfactor.StepStart{User: u, Method: method, Groups: groups, Redirect: h.redirectTarget(rd), Grant: grant})
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return true
	}
	h.setStepCookie(w, binding)
	h.event(r, "second_factor_step", slog.String("user_id", u.ID), slog.Bool("enrol", enrol))
	if web.WantsHTML(r) || method != methodPassword { // a provider's callback is a navigation
		seeOther(w, r, "/auth/2fa")
		return true
	}
	if methods == nil {
		methods = []string{}
	}
	writeJSON(w, http.StatusOK, stepAnswer{SecondFactorRequired: true, Methods: methods, EnrolmentRequired: enrol})
	return true
}

// methods lists the ways the user can give the second factor here: a
// passkey only while passkeys are on.
func (h *twoFactorFlow) methods(have storage.SecondFactors) []string {
	methods := secondfactor.Methods(have)
	if h.passkeys == nil {
		methods = slices.DeleteFunc(methods, func(m string) bool { return m == secondfactor.MethodPasskey })
	}
	return methods
}

// twoFactorPage is the data of pages/2fa.html.
type twoFactorPage struct {
	Email    string
	TOTP     bool // the user can type a code
	Passkey  bool // the user has a passkey and passkeys are on
	Recovery bool // recovery codes are left
	Error    string
	// Enrol is set when the user has no second factor and must enrol one:
	// the page shows the authenticator app's secret to confirm.
	Enrol *enrolView
	// RecoveryCodes are shown once, after a first enrolment, with Continue.
	RecoveryCodes []string
	Continue      string
}

// stepOf returns the browser's step and its user, or answers (step_expired
// as a page or a problem) and returns false.
func (h *twoFactorFlow) stepOf(w http.ResponseWriter, r *http.Request) (storage.SecondFactorStep, storage.User, bool) {
	st, err := h.factors.Step(r.Context(), h.stepCookie(r))
	if err == nil {
		var u storage.User
		if u, err = h.store.UserByID(r.Context(), st.UserID); err == nil {
			return st, u, true
		}
		if errors.Is(err, storage.ErrNotFound) {
			err = secondfactor.ErrStepExpired
		}
	}
	if errors.Is(err, secondfactor.ErrStepExpired) {
		h.clearStepCookie(w)
		h.problem(w, r, errStepExpired)
	} else {
		h.answerStoreFailure(w, r, err)
	}
	return storage.SecondFactorStep{}, storage.User{}, false
}

// page serves GET /auth/2fa: the code form, or, for a user who must enrol,
// the step's authenticator app secret to confirm.
func (h *twoFactorFlow) page(w http.ResponseWriter, r *http.Request) {
	st, u, ok := h.stepOf(w, r)
	if !ok {
		return
	}
	h.renderStep(w, r, st, u, http.StatusOK, "")
}

func (h *twoFactorFlow) renderStep(w http.ResponseWriter, r *http.Request, st storage.SecondFactorStep, u storage.User, status int, failure string) {
	have, err := h.store.SecondFactors(r.Context(), u.ID)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	p := twoFactorPage{Email: u.Email, Error: failure}
	for _, m := range h.methods(have) {
		switch m {
		case secondfactor.MethodTOTP:
			p.TOTP = true
		case secondfactor.MethodPasskey:
			p.Passkey = true
		case secondfactor.MethodRecoveryCode:
			p.Recovery = true
		}
	}
	if !have.Enrolled() {
		e, err := h.factors.StepTOTP(r.Context(), u, st)
		if err != nil {
			h.answerStoreFailure(w, r, err)
			return
		}
		p.Enrol = viewOf(e)
	}
	h.render(w, r, status, "2fa", p)
}

// verify answers POST /auth/2fa (MF1, MF2): a TOTP code or a recovery code for the
// browser's step. Failures count per account (5 per 15 minutes; a device
// cookie of the account's owner counts in its own bucket as for
// passwords); success takes the step (single use) and makes a new session
// recording both factors.
func (h *twoFactorFlow) verify(w http.ResponseWriter, r *http.Request) {
	if !h.limits.loginIP.allow(clientKey(h.cfg.ClientIP(r))) {
		h.problem(w, r, errRateLimited)
		return
	}
	in, err := readInput(r, "code", "recovery_code")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	st, u, ok := h.stepOf(w, r)
	if !ok {
		return
	}
	bucket, key := h.secondFactorBucket(r, u)
	if !bucket.allow(key) {
		h.event(r, "second_factor_throttled", slog.String("user_id", u.ID))
		h.stepRefused(w, r, st, u, errRateLimited)
		return
	}
	var second string
	if in["recovery_code"] != "" {
		second = storage.MethodRecoveryCode
		_, err = h.factors.UseRecoveryCode(r.Context(), u.ID, in["recovery_code"])
	} else {
		second = storage.MethodTOTP
		err = h.factors.VerifyTOTP(r.Context(), u.ID, in["code"])
	}
	if err != nil && !isCodeRefusal(err) {
		bucket.refund(key)
		h.answerStoreFailure(w, r, err)
		return
	}
	if err != nil {
		h.secondFactorFailed(r, u, second)
		h.stepRefused(w, r, st, u, errInvalidCode)
		return
	}
	bucket.refund(key)
	h.finishStep(w, r, st, u, second, nil)
}

// isCodeRefusal reports whether err refuses what was typed (as opposed to
// a store failure).
func isCodeRefusal(err error) bool {
	for _, e := range []error{secondfactor.ErrCodeFormat, secondfactor.ErrInvalidCode, secondfactor.ErrRecoveryCodeFormat, secondfactor.ErrInvalidRecoveryCode} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// secondFactorBucket is the failure bucket of a second-factor attempt for
// u: the device cookie's own when the browser holds a valid one for the
// account made by a sign-in that gave two factors (DV1, MF2), else the
// account's. A cookie of a one-factor sign-in (one taken before the user
// enrolled, say) does not count: else whoever had the password then could
// collect cookies and get five guesses per cookie.
func (h *twoFactorFlow) secondFactorBucket(r *http.Request, u storage.User) (*keyedLimiter, string) {
	if nonce, twoFactor := h.deviceCookie(r, storage.NormalizeEmail(u.Email)); nonce != "" && twoFactor {
		return h.limits.secondFactorDevice, nonce
	}
	return h.limits.secondFactorFailures, u.ID
}

// secondFactorFailed logs, audits and counts a refused second factor.
func (h *twoFactorFlow) secondFactorFailed(r *http.Request, u storage.User, method string) {
	h.event(r, "second_factor_failed", slog.String("user_id", u.ID), slog.String("method", method))
	h.recordAudit(r, audit.SecondFactorFailed, u.ID, u.Email, "")
}

// stepRefused answers a refused second factor: the page again with the
// error, or the problem.
func (h *twoFactorFlow) stepRefused(w http.ResponseWriter, r *http.Request, st storage.SecondFactorStep, u storage.User, p web.Problem) {
	if !web.WantsHTML(r) {
		web.WriteProblem(w, r, p)
		return
	}
	h.renderStep(w, r, st, u, p.Status, p.Title+".")
}

// finishStep takes the step (single use: of two finishes one wins) and
// makes a new session of the step's first factor and second: a fresh id
// (the browser's earlier session, if any, is replaced), the user's epoch
// as it was at the first factor so that a reset or revocation in between
// leaves no session. codes, when set, are new recovery codes to show once.
func (h *twoFactorFlow) finishStep(w http.ResponseWriter, r *http.Request, st storage.SecondFactorStep, u storage.User, second string, codes []string) {
	st, err := h.factors.FinishStep(r.Context(), h.stepCookie(r))
	h.clearStepCookie(w)
	// A step of ?reauth=second-factor ends with the session it upgrades.
	over := err == nil && !st.SessionExpiresAt.IsZero() && !h.now().Before(st.SessionExpiresAt)
	if errors.Is(err, secondfactor.ErrStepExpired) || err == nil && st.UserID != u.ID || over {
		h.problem(w, r, errStepExpired)
		return
	}
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	// A step of ?reauth=second-factor adds a factor to a session, it is no
	// sign-in: the new session keeps that one's creation time and expiry,
	// its provider grant and its groups as they are now (a refresh may
	// have taken one away while the step ran).
	grant := st.Grant // a provider sign-in's
	upgrade := !st.SessionCreatedAt.IsZero() && !st.SessionExpiresAt.IsZero()
	if upgrade {
		live, g, ok := h.upgradedSession(w, r, st)
		if !ok {
			return
		}
		grant, st.Groups = g, live.Groups
	}
	if p, reason := h.signInRefusal(u, u.Email, st.Groups); reason != "" {
		h.event(r, "login_refused", slog.String("user_id", u.ID), slog.String("reason", reason))
		h.recordAudit(r, audit.AccessDenied, u.ID, u.Email, "")
		h.problem(w, r, p)
		return
	}
	u.Epoch = st.Epoch
	signedIn := h.newSignIn(st.Method, st.Groups)
	signedIn.SecondFactor = second
	if upgrade {
		signedIn.CreatedAt, signedIn.ExpiresAt = st.SessionCreatedAt, st.SessionExpiresAt
	}
	s, err := h.issueSession(w, r, u, signedIn)
	switch {
	case err != nil:
	case st.Grant != nil: // a provider sign-in's first grant
		err = h.grantTo(r, s, *grant)
	case grant != nil: // the upgraded session's, due when it was
		if err = h.keepGrant(r.Context(), s, *grant); err != nil {
			err = h.dropSession(r, s, err)
		}
	}
	if err != nil {
		h.answerStoreFailure(w, r, fmt.Errorf("second factor: sign in: %w", err))
		return
	}
	h.event(r, "login_ok", slog.String("user_id", u.ID), slog.String("second_factor", second))
	h.recordAudit(r, audit.Login, u.ID, u.Email, "")
	h.metrics.logins.WithLabelValues("ok").Inc()
	if web.WantsHTML(r) {
		if len(codes) > 0 {
			h.render(w, r, http.StatusOK, "2fa", twoFactorPage{Email: u.Email, RecoveryCodes: codes, Continue: st.Redirect})
			return
		}
		seeOther(w, r, st.Redirect)
		return
	}
	answer := struct {
		User          userAnswer `json:"user"`
		RecoveryCodes []string   `json:"recovery_codes,omitempty"`
		Redirect      string     `json:"redirect"` // where a page's script goes next
	}{userAnswer{ID: u.ID, Email: u.Email}, codes, st.Redirect}
	writeJSON(w, http.StatusOK, answer)
}

// upgradedSession is the session a ?reauth=second-factor step upgrades,
// as it is now, and its provider grant (nil for a password sign-in). That
// session is the browser's and must still be live: one a sign-out, a
// revocation, a refresh or the provider's back-channel logout ended while
// the step ran leaves nothing to upgrade (step_expired). Its groups and
// grant go with the upgrade, so that the new session has no group the
// provider took away meanwhile and stays within reach of the refresher
// and of the provider's sign-out. It reports whether the step may go on;
// when not, it answered.
func (h *twoFactorFlow) upgradedSession(w http.ResponseWriter, r *http.Request, st storage.SecondFactorStep) (storage.Session, *storage.Grant, bool) {
	s, err := h.currentSession(r)
	if errors.Is(err, errNoSession) || err == nil && (s.UserID != st.UserID ||
		!s.CreatedAt.Equal(st.SessionCreatedAt) || !s.ExpiresAt.Equal(st.SessionExpiresAt)) {
		h.problem(w, r, errStepExpired)
		return storage.Session{}, nil, false
	}
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return storage.Session{}, nil, false
	}
	grant, err := h.grantOf(r.Context(), s)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return storage.Session{}, nil, false
	}
	return s, grant, true
}

// enrol answers POST /auth/2fa/totp: a user who must enrol (no second
// factor, --second-factor=required) gets the step's authenticator app
// secret, as POST /auth/account/totp answers, bound to the step instead of
// a session: the same one for the whole step (StepTOTP).
func (h *twoFactorFlow) enrol(w http.ResponseWriter, r *http.Request) {
	st, u, ok := h.stepOf(w, r)
	if !ok {
		return
	}
	have, err := h.store.SecondFactors(r.Context(), u.ID)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	if have.Enrolled() {
		h.problem(w, r, errEnrolled)
		return
	}
	e, err := h.factors.StepTOTP(r.Context(), u, st)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, totpAnswer{ID: e.FactorID, Secret: e.Secret, URL: e.URL})
}

// confirmEnrol answers POST /auth/2fa/totp/confirm: the first code of the
// authenticator app enrolled during the step confirms it, counts as the
// second factor and makes the session; the recovery codes are shown once.
func (h *twoFactorFlow) confirmEnrol(w http.ResponseWriter, r *http.Request) {
	in, err := readInput(r, "id", "code")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	st, u, ok := h.stepOf(w, r)
	if !ok {
		return
	}
	have, err := h.store.SecondFactors(r.Context(), u.ID)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	if have.Enrolled() { // this step wants the factor the user has, not a new one
		h.problem(w, r, errEnrolled)
		return
	}
	bucket, key := h.secondFactorBucket(r, u)
	if !bucket.allow(key) {
		h.stepRefused(w, r, st, u, errRateLimited)
		return
	}
	codes, err := h.factors.ConfirmTOTP(r.Context(), u.ID, in["id"], in["code"])
	if err != nil && !isCodeRefusal(err) && !errors.Is(err, secondfactor.ErrNoPendingFactor) {
		bucket.refund(key)
		h.answerStoreFailure(w, r, err)
		return
	}
	if err != nil {
		h.secondFactorFailed(r, u, storage.MethodTOTP)
		h.stepRefused(w, r, st, u, errInvalidCode)
		return
	}
	bucket.refund(key)
	h.factorAdded(r, u, storage.FactorTOTP)
	h.finishStep(w, r, st, u, storage.MethodTOTP, codes)
}

// What GET /auth/login?reauth= asks of a signed-in browser (the proxy
// sends it there when a route's rule is not met).
const (
	reauthMaxAge       = "max-age"       // sign in again: the sign-in is too old
	reauthSecondFactor = "second-factor" // give a second factor
)

// reauth answers GET /auth/login?reauth=second-factor for a session made
// without a second factor: a user with one gets a step from the session's
// first factor and goes to /auth/2fa, which makes a new session with both
// (of the same creation time and expiry: giving a factor is no sign-in);
// a user without one goes to the account page to enrol. It reports
// whether it answered; anything else is the sign-in page's.
func (h *twoFactorFlow) reauth(w http.ResponseWriter, r *http.Request, s storage.Session, kind, rd string) bool {
	if kind != reauthSecondFactor || s.MultiFactor() || s.Method == "" {
		return false // the sign-in page asks for a sign-in afresh
	}
	u, err := h.store.UserByID(r.Context(), s.UserID)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return true
	}
	have, err := h.store.SecondFactors(r.Context(), u.ID)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return true
	}
	if !have.Enrolled() {
		seeOther(w, r, h.withRedirect("/auth/account", rd)+"#factors")
		return true
	}
	binding, err := h.factors.BeginStep(r.Context(), secondfactor.StepStart{User: u, Method: s.Method, Groups: s.Groups, Redirect: rd, Session: &s})
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return true
	}
	h.setStepCookie(w, binding)
	seeOther(w, r, "/auth/2fa")
	return true
}
