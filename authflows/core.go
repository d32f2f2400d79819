package authflows

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/authflows/provider"
	"github.com/gatehouse-auth/gatehouse/proxy/session"
)

// core is what every flow shares: the configuration, the clock and the
// logger, the session gate and the making and ending of sessions
// (session.go), the device cookie (devicecookie.go), the throttles, the
// hasher, the pages and mail templates, the configured providers, and the
// event and audit lines. Each flow embeds it and adds its own store.
type core struct {
	cfg       Config
	sessions  sessionStore // sign-in and sign-out of a browser (session.go)
	secrets   deviceStore  // the device cookie's key (devicecookie.go)
	grants    grantStore   // provider sessions' grants (grants.go)
	gate      *session.Gate
	log       *slog.Logger
	now       func() time.Time
	hasher    *password.Hasher
	limits    *limits
	metrics   *metrics
	pages     *pages
	providers map[string]*provider.Provider
	mails     *mailTemplates
	device    deviceKey // HMAC key of device cookies (DV1)
}

// event writes one structured event line (LG2): the event name, the client IP
// and request id, plus attrs. Callers never pass secrets.
func (h *core) event(r *http.Request, name string, attrs ...slog.Attr) {
	base := []slog.Attr{slog.String("event", name), slog.String("client_ip", h.cfg.ClientIP(r).String())}
	if id := r.Header.Get("X-Request-Id"); id != "" {
		base = append(base, slog.String("request_id", id))
	}
	h.log.LogAttrs(r.Context(), slog.LevelInfo, "auth event", append(base, attrs...)...)
}

// oauthEvent writes an event line (LG2) and counts it by provider and result
// (login, user_created, linked, unlinked, state_failed, refused, error,
// throttled).
func (h *core) oauthEvent(r *http.Request, providerName, result string, attrs ...slog.Attr) {
	h.metrics.oauth.WithLabelValues(providerName, result).Inc()
	h.event(r, "oauth_"+result, append([]slog.Attr{slog.String("provider", providerName)}, attrs...)...)
}
