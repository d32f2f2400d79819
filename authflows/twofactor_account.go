package authflows

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
	"github.com/gatehouse-auth/gatehouse/authflows/secondfactor"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// The account's second factors: list, enrol TOTP, remove, regenerate the
// recovery codes. Every change needs a sign-in within
// secondfactor.ReauthWindow (recentSession).

var (
	errNoSuchFactor   = web.NewProblem(http.StatusNotFound, "not_found", "No such factor")
	errNoSecondFactor = web.NewProblem(http.StatusConflict, "no_second_factor", "Recovery codes need a second factor: add one first")
	errConfirmCode    = web.NewProblem(http.StatusBadRequest, "invalid_code", "Wrong code: type the one the app shows now")
)

// recentSession (MF3) returns the request's session when it signed in within
// secondfactor.ReauthWindow. An older one gets 401
// reauthentication_required, or, for a browser, a 303 to sign in again
// that comes back to the account page.
func (h *core) recentSession(w http.ResponseWriter, r *http.Request) (storage.Session, bool) {
	s, ok := h.requireSession(w, r)
	if !ok {
		return storage.Session{}, false
	}
	if secondfactor.RecentSignIn(s, h.now()) {
		return s, true
	}
	h.event(r, "reauthentication_required", slog.String("user_id", s.UserID), slog.String("path", r.URL.Path))
	if web.WantsHTML(r) {
		seeOther(w, r, "/auth/login?reauth=max-age&rd="+url.QueryEscape("/auth/account"))
		return storage.Session{}, false
	}
	web.WriteProblem(w, r, errReauthNeeded)
	return storage.Session{}, false
}

// factorAnswer is one factor of GET /auth/account/factors.
type factorAnswer struct {
	ID      string    `json:"id"`
	Type    string    `json:"type"`
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
}

type factorsAnswer struct {
	Factors           []factorAnswer `json:"factors"`
	RecoveryCodesLeft int            `json:"recovery_codes_left"`
}

// listOf is the user's confirmed TOTP factors and passkeys, oldest first.
func listOf(have storage.SecondFactors) factorsAnswer {
	a := factorsAnswer{Factors: []factorAnswer{}, RecoveryCodesLeft: have.RecoveryCodesLeft}
	for _, t := range have.TOTP {
		if t.Confirmed {
			a.Factors = append(a.Factors, factorAnswer{ID: t.ID, Type: storage.FactorTOTP, Name: t.Name, Created: t.CreatedAt.UTC()})
		}
	}
	for _, p := range have.Passkeys {
		a.Factors = append(a.Factors, factorAnswer{ID: p.ID, Type: storage.FactorPasskey, Name: p.Name, Created: p.CreatedAt.UTC()})
	}
	return a
}

// listFactors answers GET /auth/account/factors.
func (h *twoFactorFlow) listFactors(w http.ResponseWriter, r *http.Request) {
	s, err := h.currentSession(r)
	switch {
	case errors.Is(err, errNoSession):
		h.answerUnauthenticated(w, r)
		return
	case err != nil:
		h.answerStoreFailure(w, r, err)
		return
	}
	have, err := h.store.SecondFactors(r.Context(), s.UserID)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, listOf(have))
}

// totpAnswer is POST /auth/account/totp's answer.
type totpAnswer struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
	URL    string `json:"otpauth_url"`
}

// beginTOTP answers POST /auth/account/totp: a new authenticator app
// secret, pending until confirmed; a browser gets the page with the QR code.
func (h *twoFactorFlow) beginTOTP(w http.ResponseWriter, r *http.Request) {
	s, ok := h.recentSession(w, r)
	if !ok {
		return
	}
	in := map[string]string{}
	if r.ContentLength != 0 { // the name is optional, and so is the body
		var err error
		if in, err = readInput(r, "name"); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	u, err := h.store.UserByID(r.Context(), s.UserID)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	e, err := h.factors.BeginTOTP(r.Context(), u, in["name"])
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	if web.WantsHTML(r) {
		h.render(w, r, http.StatusOK, "factor", factorPage{Enrol: viewOf(e)})
		return
	}
	writeJSON(w, http.StatusOK, totpAnswer{ID: e.FactorID, Secret: e.Secret, URL: e.URL})
}

// factorPage is the data of pages/factor.html: an enrolment to confirm,
// or recovery codes to keep.
type factorPage struct {
	Enrol         *enrolView
	Error         string
	RecoveryCodes []string
}

// enrolView is a TOTP enrolment as a page shows it: the otpauth link and
// the QR code's data URI are trusted URLs (html/template would refuse
// both schemes), made by secondfactor from the secret, never from input.
type enrolView struct {
	FactorID, Secret string
	URL, QRCode      template.URL
}

func viewOf(e secondfactor.Enrolment) *enrolView {
	return &enrolView{FactorID: e.FactorID, Secret: e.Secret, URL: template.URL(e.URL), QRCode: template.URL(e.QRCode)} //nolint:gosec // made by secondfactor, not from input
}

// confirmTOTP answers POST /auth/account/totp/confirm: the app's code
// confirms the pending factor; the first factor of a user brings the
// recovery codes, shown once.
func (h *twoFactorFlow) confirmTOTP(w http.ResponseWriter, r *http.Request) {
	s, ok := h.requireSession(w, r)
	if !ok {
		return
	}
	in, err := readInput(r, "id", "code")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	u, err := h.store.UserByID(r.Context(), s.UserID)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	codes, err := h.factors.ConfirmTOTP(r.Context(), u.ID, in["id"], in["code"])
	switch {
	case err != nil && (isCodeRefusal(err) || errors.Is(err, secondfactor.ErrNoPendingFactor)):
		h.event(r, "factor_confirm_failed", slog.String("user_id", u.ID))
		h.problem(w, r, errConfirmCode)
		return
	case err != nil:
		h.answerStoreFailure(w, r, err)
		return
	}
	h.factorAdded(r, u, storage.FactorTOTP)
	h.answerCodes(w, r, codes, "factor_added")
}

// answerCodes answers a change that may bring recovery codes: the codes
// page (or the account page with done) for a browser, the codes as JSON.
func (h *twoFactorFlow) answerCodes(w http.ResponseWriter, r *http.Request, codes []string, done string) {
	if web.WantsHTML(r) {
		if len(codes) == 0 {
			seeOther(w, r, "/auth/account?done="+done)
			return
		}
		h.render(w, r, http.StatusOK, "factor", factorPage{RecoveryCodes: codes})
		return
	}
	if len(codes) == 0 {
		writeJSON(w, http.StatusOK, struct{}{})
		return
	}
	writeJSON(w, http.StatusOK, struct {
		RecoveryCodes []string `json:"recovery_codes"`
	}{codes})
}

// removeFactor answers DELETE /auth/account/factors/{id} (and the account
// page's POST …/remove): 204, or 404 for a factor not the user's.
func (h *twoFactorFlow) removeFactor(w http.ResponseWriter, r *http.Request) {
	s, ok := h.recentSession(w, r)
	if !ok {
		return
	}
	u, err := h.store.UserByID(r.Context(), s.UserID)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	err = h.store.RemoveFactor(r.Context(), u.ID, r.PathValue("id"))
	switch {
	case errors.Is(err, storage.ErrNotFound):
		h.problem(w, r, errNoSuchFactor)
		return
	case err != nil:
		h.answerStoreFailure(w, r, err)
		return
	}
	h.event(r, "factor_removed", slog.String("user_id", u.ID))
	h.recordAudit(r, audit.FactorRemoved, u.ID, u.Email, "")
	h.notice(r, u, storage.FactorNoticeRemoved)
	if web.WantsHTML(r) {
		seeOther(w, r, "/auth/account?done=factor_removed")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// regenerateCodes answers POST /auth/account/recovery-codes: a new set,
// the old one void.
func (h *twoFactorFlow) regenerateCodes(w http.ResponseWriter, r *http.Request) {
	s, ok := h.recentSession(w, r)
	if !ok {
		return
	}
	u, err := h.store.UserByID(r.Context(), s.UserID)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	codes, err := h.factors.RegenerateRecoveryCodes(r.Context(), u.ID)
	switch {
	case errors.Is(err, secondfactor.ErrNoSecondFactor):
		h.problem(w, r, errNoSecondFactor)
		return
	case err != nil:
		h.answerStoreFailure(w, r, err)
		return
	}
	h.event(r, "recovery_codes_regenerated", slog.String("user_id", u.ID))
	h.recordAudit(r, audit.RecoveryCodesRegenerated, u.ID, u.Email, "")
	h.notice(r, u, storage.FactorNoticeRecoveryCodes)
	if web.WantsHTML(r) {
		h.render(w, r, http.StatusOK, "factor", factorPage{RecoveryCodes: codes})
		return
	}
	writeJSON(w, http.StatusOK, struct {
		RecoveryCodes []string `json:"recovery_codes"`
	}{codes})
}

// factorAdded logs, audits and mails the notice of a new factor of kind
// (storage.FactorTOTP or storage.FactorPasskey).
func (h *twoFactorFlow) factorAdded(r *http.Request, u storage.User, kind string) {
	h.event(r, "factor_added", slog.String("user_id", u.ID), slog.String("type", kind))
	h.recordAudit(r, audit.FactorAdded, u.ID, u.Email, "")
	h.notice(r, u, storage.FactorNoticeAdded)
}

// notice queues the mail telling the user of a change to the second
// factor; a failure is logged, the change stands.
func (h *twoFactorFlow) notice(r *http.Request, u storage.User, change string) {
	if _, err := h.store.EnqueueMail(r.Context(), storage.FactorChangedJob(u, h.now(), change)); err != nil {
		h.log.WarnContext(r.Context(), "second factor notice not queued", "user_id", u.ID, "err", fmt.Errorf("enqueue: %w", err))
		return
	}
	h.cfg.WakeMailer()
}

// factorsSection is the account page's "Second factor" section.
type factorsSection struct {
	Factors           []factorAnswer
	RecoveryCodesLeft int
	Passkeys          bool // passkeys are on: offer "Add a passkey"
}

// section reads the user's factors for the account page.
func (h *twoFactorFlow) section(ctx context.Context, userID string) (factorsSection, error) {
	have, err := h.store.SecondFactors(ctx, userID)
	if err != nil {
		return factorsSection{}, err
	}
	l := listOf(have)
	return factorsSection{Factors: l.Factors, RecoveryCodesLeft: l.RecoveryCodesLeft, Passkeys: h.passkeys != nil}, nil
}
