package authflows

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
	"github.com/gatehouse-auth/gatehouse/authflows/secondfactor"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// Passkeys: registration from the account (a recent sign-in), sign-in
// without a password (two factors in one), and a passkey as the second
// factor of a step. Each ceremony's challenge is kept by
// secondfactor.Passkeys, bound to this browser by the ceremony cookie (MF4).

// With Secure cookies the ceremony cookie is a __Host- one (Path=/, no
// Domain) that a sibling host cannot plant (CK1), which the proxy keeps
// from the upstream (SS8); without, it is scoped to /auth/.
const (
	ceremonyCookieName       = "gatehouse_webauthn"
	secureCeremonyCookieName = "__Host-" + ceremonyCookieName
)

// CeremonyCookieName is the passkey ceremony cookie's name, for the proxy
// to strip: secure says whether cookies are Secure.
func CeremonyCookieName(secure bool) string {
	if secure {
		return secureCeremonyCookieName
	}
	return ceremonyCookieName
}

func (h *twoFactorFlow) ceremonyCookieAt() (name, path string) {
	if h.cfg.CookieSecure {
		return secureCeremonyCookieName, "/"
	}
	return ceremonyCookieName, "/auth/"
}

var (
	errInvalidCredential     = web.NewProblem(http.StatusUnauthorized, "invalid_credential", "The passkey was not accepted")
	errInvalidNewCredential  = web.NewProblem(http.StatusBadRequest, "invalid_credential", "The passkey could not be registered")
	errPasskeysOff           = web.NewProblem(http.StatusNotFound, "passkeys_off", "Passkeys are not offered here")
	errPasskeyNoSecondFactor = web.NewProblem(http.StatusBadRequest, "no_passkey", "You have no passkey: use a code")
)

func (h *twoFactorFlow) setCeremonyCookie(w http.ResponseWriter, value string) {
	name, path := h.ceremonyCookieAt()
	http.SetCookie(w, h.placeCookie(name, value, path, secondfactor.DefaultCeremonyTTL))
}

// takeCeremonyCookie reads the ceremony cookie and expires it: a ceremony
// is finished once, whatever the outcome.
func (h *twoFactorFlow) takeCeremonyCookie(w http.ResponseWriter, r *http.Request) string {
	name, path := h.ceremonyCookieAt()
	v := placeCookieValue(r, name)
	http.SetCookie(w, h.placeCookie(name, "", path, -1))
	return v
}

// begun answers a begun ceremony: its options, and the cookie.
func (h *twoFactorFlow) begun(w http.ResponseWriter, b secondfactor.Begun) {
	h.setCeremonyCookie(w, b.Binding)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.Options)
}

// passkeysOn answers 404 passkeys_off when passkeys are off.
func (h *twoFactorFlow) passkeysOn(w http.ResponseWriter, r *http.Request) bool {
	if h.passkeys == nil {
		web.WriteProblem(w, r, errPasskeysOff)
		return false
	}
	return true
}

// registerBegin answers POST /auth/passkey/register/begin.
func (h *twoFactorFlow) registerBegin(w http.ResponseWriter, r *http.Request) {
	if !h.passkeysOn(w, r) {
		return
	}
	s, ok := h.recentSession(w, r)
	if !ok {
		return
	}
	u, err := h.store.UserByID(r.Context(), s.UserID)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	b, err := h.passkeys.BeginRegistration(r.Context(), u, s.IDHash)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	h.begun(w, b)
}

// registerFinish answers POST /auth/passkey/register/finish: the
// credential in WebAuthn JSON form (?name= names it) → 200 {"id"}, with
// the recovery codes when it is the user's first second factor.
func (h *twoFactorFlow) registerFinish(w http.ResponseWriter, r *http.Request) {
	if !h.passkeysOn(w, r) {
		return
	}
	s, ok := h.recentSession(w, r)
	if !ok {
		return
	}
	u, err := h.store.UserByID(r.Context(), s.UserID)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	reg, err := h.passkeys.FinishRegistration(r.Context(), u, s.IDHash, h.takeCeremonyCookie(w, r), r.Body, r.URL.Query().Get("name"))
	if errors.Is(err, secondfactor.ErrInvalidCredential) {
		h.event(r, "passkey_refused", slog.String("user_id", u.ID), slog.String("reason", err.Error()))
		web.WriteProblem(w, r, errInvalidNewCredential)
		return
	}
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	h.factorAdded(r, u, storage.FactorPasskey)
	writeJSON(w, http.StatusOK, struct {
		ID            string   `json:"id"`
		RecoveryCodes []string `json:"recovery_codes,omitempty"`
	}{reg.Passkey.ID, reg.RecoveryCodes})
}

// loginBegin answers POST /auth/passkey/login/begin: discoverable, no
// allow list.
func (h *twoFactorFlow) loginBegin(w http.ResponseWriter, r *http.Request) {
	if !h.passkeysOn(w, r) {
		return
	}
	if !h.limits.loginIP.allow(clientKey(h.cfg.ClientIP(r))) {
		web.WriteProblem(w, r, errRateLimited)
		return
	}
	b, err := h.passkeys.BeginLogin(r.Context())
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	h.begun(w, b)
}

// loginFinish answers POST /auth/passkey/login/finish: the assertion → a
// session of two factors (amr hwk, mfa) without a password. ?rd= is
// where the page goes next, answered as "redirect".
func (h *twoFactorFlow) loginFinish(w http.ResponseWriter, r *http.Request) {
	if !h.passkeysOn(w, r) {
		return
	}
	if !h.limits.loginIP.allow(clientKey(h.cfg.ClientIP(r))) {
		web.WriteProblem(w, r, errRateLimited)
		return
	}
	pk, err := h.passkeys.FinishLogin(r.Context(), h.takeCeremonyCookie(w, r), r.Body)
	if errors.Is(err, secondfactor.ErrInvalidCredential) {
		if errors.Is(err, secondfactor.ErrPossibleClone) {
			h.log.WarnContext(r.Context(), "passkey refused: its signature counter did not increase (cloned authenticator?)")
		}
		h.event(r, "login_failed", slog.String("method", storage.MethodPasskey))
		h.metrics.logins.WithLabelValues("failed").Inc()
		web.WriteProblem(w, r, errInvalidCredential)
		return
	}
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	u, err := h.store.UserByID(r.Context(), pk.UserID)
	if errors.Is(err, storage.ErrNotFound) {
		web.WriteProblem(w, r, errInvalidCredential)
		return
	}
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	if p, reason := h.signInRefusal(u, u.Email, ""); reason != "" {
		h.event(r, "login_refused", slog.String("user_id", u.ID), slog.String("reason", reason))
		h.recordAudit(r, audit.AccessDenied, u.ID, u.Email, "")
		web.WriteProblem(w, r, p)
		return
	}
	if _, err := h.issueSession(w, r, u, h.newSignIn(storage.MethodPasskey, "")); err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	h.event(r, "login_ok", slog.String("user_id", u.ID), slog.String("method", storage.MethodPasskey))
	h.recordAudit(r, audit.Login, u.ID, u.Email, "")
	h.metrics.logins.WithLabelValues("ok").Inc()
	writeJSON(w, http.StatusOK, struct {
		User     userAnswer `json:"user"`
		Redirect string     `json:"redirect"`
	}{userAnswer{ID: u.ID, Email: u.Email}, h.redirectTarget(r.URL.Query().Get("rd"))})
}

// stepBegin answers POST /auth/2fa/passkey/begin: a ceremony limited to
// the stepping user's passkeys.
func (h *twoFactorFlow) stepBegin(w http.ResponseWriter, r *http.Request) {
	if !h.passkeysOn(w, r) {
		return
	}
	_, u, ok := h.stepOf(w, r)
	if !ok {
		return
	}
	b, err := h.passkeys.BeginSecondFactor(r.Context(), u.ID)
	if errors.Is(err, secondfactor.ErrNoPasskey) {
		web.WriteProblem(w, r, errPasskeyNoSecondFactor)
		return
	}
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	h.begun(w, b)
}

// stepFinish answers POST /auth/2fa/passkey/finish: the assertion of one
// of the stepping user's passkeys finishes the step. Failures count as
// failed second factors.
func (h *twoFactorFlow) stepFinish(w http.ResponseWriter, r *http.Request) {
	if !h.passkeysOn(w, r) {
		return
	}
	st, u, ok := h.stepOf(w, r)
	if !ok {
		return
	}
	bucket, key := h.secondFactorBucket(r, u)
	if !bucket.allow(key) {
		web.WriteProblem(w, r, errRateLimited)
		return
	}
	_, err := h.passkeys.FinishSecondFactor(r.Context(), u.ID, h.takeCeremonyCookie(w, r), r.Body)
	if errors.Is(err, secondfactor.ErrInvalidCredential) {
		h.secondFactorFailed(r, u, storage.MethodPasskey)
		web.WriteProblem(w, r, errInvalidCredential)
		return
	}
	bucket.refund(key)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	h.finishStep(w, r, st, u, storage.MethodPasskey, nil)
}
