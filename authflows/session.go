package authflows

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// newSecret returns 256 random bits, URL-safe base64 without padding: the
// form of session ids, reset tokens, OAuth states and PKCE verifiers.
func newSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// startSession creates a new session for u with a fresh id (SS4: whatever
// cookie the browser brought is never promoted) and sets the cookie.
func (h *Handler) startSession(w http.ResponseWriter, r *http.Request, u storage.User) error {
	sessionID := newSecret()
	now := h.now()
	s := storage.Session{
		IDHash:    storage.HashSecret(sessionID),
		UserID:    u.ID,
		Email:     u.Email,
		CreatedAt: now,
		ExpiresAt: now.Add(h.cfg.SessionTTL),
		LastSeen:  now,
		// The epoch read with the credential just checked: the store refuses
		// the session if a reset, password change, disable or revocation
		// came in between (storage.ErrCredentialsChanged).
		Epoch: u.Epoch,
	}
	if err := h.store.CreateSession(r.Context(), s); err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	if old, ok := h.sessionCookie(r); ok {
		// The browser's previous session is replaced, not kept alongside.
		// Failing that, it lives on until it expires: worth a log line.
		if err := h.store.DeleteSession(r.Context(), storage.HashSecret(old)); err != nil {
			h.log.WarnContext(r.Context(), "delete replaced session", "user_id", u.ID, "err", err)
		}
	}
	http.SetCookie(w, h.cookie(sessionID, int(h.cfg.SessionTTL.Seconds())))
	return nil
}

// errCredentialsChanged: the account's credentials or state changed while
// the sign-in was being checked (a reset completed, the account was disabled
// or its sessions revoked); the sign-in made no session and must start over.
var errCredentialsChanged = web.NewProblem(http.StatusConflict, "credentials_changed",
	"Your account changed while you were signing in, sign in again")

// cookie is the session cookie (SS2): HttpOnly, SameSite=Lax, Path=/, Secure
// per flag, Max-Age no longer than the absolute lifetime; maxAge < 0 expires it.
func (h *Handler) cookie(value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name:     h.cfg.CookieName,
		Value:    value,
		Path:     "/",
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   h.cfg.CookieSecure,
		SameSite: http.SameSiteLaxMode,
	}
}

// expireCookie tells the browser to drop the session cookie.
func (h *Handler) expireCookie(w http.ResponseWriter) {
	http.SetCookie(w, h.cookie("", -1))
}

// sessionCookie reads the session id, only ever from the Cookie header (SS7).
func (h *Handler) sessionCookie(r *http.Request) (string, bool) {
	c, err := r.Cookie(h.cfg.CookieName)
	if err != nil || c.Value == "" {
		return "", false
	}
	return c.Value, true
}

// errNoSession: the request carries no active session.
var errNoSession = errors.New("no active session")

// currentSession returns the request's active session. A store failure is
// returned as such (fail closed), a missing or expired one as errNoSession.
func (h *Handler) currentSession(r *http.Request) (storage.Session, error) {
	id, ok := h.sessionCookie(r)
	if !ok {
		return storage.Session{}, errNoSession
	}
	s, err := h.store.Session(r.Context(), storage.HashSecret(id))
	if errors.Is(err, storage.ErrNotFound) {
		return storage.Session{}, errNoSession
	}
	if err != nil {
		return storage.Session{}, err
	}
	if !s.Active(h.now(), h.cfg.SessionIdleTTL) {
		return storage.Session{}, errNoSession
	}
	return s, nil
}

// answerUnauthenticated answers 401 unauthenticated with a WWW-Authenticate
// header, exactly as the proxy does in --mode=401, whatever the mode.
func (h *Handler) answerUnauthenticated(w http.ResponseWriter, r *http.Request) {
	web.Denier{Mode: web.Mode401}.Deny(w, r)
}

// answerStoreFailure logs a store error and answers 503: fail closed.
func (h *Handler) answerStoreFailure(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, storage.ErrCredentialsChanged) {
		h.event(r, "sign_in_superseded")
		web.WriteProblem(w, r, errCredentialsChanged)
		return
	}
	h.log.ErrorContext(r.Context(), "store unavailable", "path", r.URL.Path, "err", err)
	web.WriteProblem(w, r, errStoreUnavailable)
}
