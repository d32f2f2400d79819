package authflows

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/provider"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// backchannelFlow is OpenID Connect Back-Channel Logout: the OpenID
// Provider posts a logout token, server to server, and the sessions of
// that OP session (sid) or of that account (sub) end on every replica.
// No cookie and no CSRF check apply (the token is the credential); the
// cross-origin check of /auth/ POSTs exempts this path only (authflows.go).
type backchannelFlow struct {
	*core
	store backchannelStore
}

// backchannelStore is what back-channel logout needs of the store.
type backchannelStore interface {
	UseOnce(ctx context.Context, key storage.Hash, now, until time.Time) (bool, error)
	EndGrantSessions(ctx context.Context, provider, subject, sid string) ([]storage.Grant, error)
}

// BackchannelLogoutPath is where the OpenID Provider posts logout tokens
// (its backchannel_logout_uri is {base-url} and this path).
const BackchannelLogoutPath = "/auth/backchannel-logout/oidc"

// maxLogoutBody bounds the body read before it is parsed: one form field
// holding a JWT.
const maxLogoutBody = 16 << 10

var errLogoutRequest = web.NewProblem(http.StatusBadRequest, "invalid_request", "The logout token is missing or not valid")

// logout is POST /auth/backchannel-logout/oidc with logout_token (a form).
// 200 and {} when the token is valid (whether or not a session matched:
// the OP must not learn which sessions exist); otherwise 400
// invalid_request, as JSON whatever the request's Accept.
func (h *backchannelFlow) logout(w http.ResponseWriter, r *http.Request) {
	p, ok := h.providers["oidc"]
	if !ok {
		h.refuseLogout(w, r, "oidc not configured")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLogoutBody)
	if err := r.ParseForm(); err != nil {
		h.refuseLogout(w, r, "unreadable body")
		return
	}
	tok, err := p.VerifyLogoutToken(r.Context(), r.PostForm.Get("logout_token"))
	if err != nil {
		var bad provider.IDTokenError
		if !errors.As(err, &bad) {
			h.log.WarnContext(r.Context(), "back-channel logout: could not verify", "err", err)
		}
		h.refuseLogout(w, r, err.Error())
		return
	}
	// The jti is used up only once the sessions ended: a store failure
	// in between answers 503 and leaves the token good for the OP's retry.
	// It is looked at first (a mark until now is past at once: the look
	// takes nothing) and marked after; a copy arriving in between ends the
	// same sessions, nothing more.
	now := h.now()
	jti := storage.HashSecret("logout-jti\x00" + p.Name + "\x00" + tok.ID)
	free, err := h.store.UseOnce(r.Context(), jti, now, now)
	if err != nil {
		h.storeFailed(w, r, "look at the jti", err)
		return
	}
	if !free {
		h.refuseLogout(w, r, "jti used before")
		return
	}
	ended, err := h.store.EndGrantSessions(r.Context(), p.Name, tok.Subject, tok.SID)
	if err != nil {
		h.storeFailed(w, r, "end the sessions", err)
		return
	}
	if _, err := h.store.UseOnce(r.Context(), jti, now, tok.Expiry); err != nil {
		// The sessions ended; only a replay of this token within its
		// lifetime could end that OP session's next sign-in.
		h.log.ErrorContext(r.Context(), "back-channel logout: record the jti", "err", err)
	}
	for _, g := range ended {
		h.endedByProvider(r.Context(), storage.Session{IDHash: g.Session, UserID: g.UserID}, p.Name, "back-channel logout")
	}
	h.event(r, "backchannel_logout", slog.Int("sessions_ended", len(ended)))
	writeJSON(w, http.StatusOK, struct{}{})
}

// storeFailed logs a store failure and answers 503, which the OP may retry.
func (h *backchannelFlow) storeFailed(w http.ResponseWriter, r *http.Request, what string, err error) {
	h.log.ErrorContext(r.Context(), "back-channel logout: "+what, "err", err)
	writeJSONProblem(w, web.NewProblem(http.StatusServiceUnavailable, "store_unavailable", "Try again"))
}

// refuseLogout answers 400 invalid_request as JSON and logs why.
func (h *backchannelFlow) refuseLogout(w http.ResponseWriter, r *http.Request, reason string) {
	h.event(r, "backchannel_logout_refused", slog.String("reason", clip(reason, 200)))
	writeJSONProblem(w, errLogoutRequest)
}

// writeJSONProblem answers p as application/problem+json whatever the
// request asked for: the caller is a server, never a browser.
func writeJSONProblem(w http.ResponseWriter, p web.Problem) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
