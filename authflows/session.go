package authflows

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-auth/gatehouse/proxy/session"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// sessionStore is what making and ending sessions needs of the store, and
// the session gate (proxy.Gate) looks a session up in.
type sessionStore interface {
	session.SessionSource
	CreateSession(ctx context.Context, s storage.Session) error
	DeleteSession(ctx context.Context, idHash storage.Hash) error
}

// newSecret returns 256 random bits, URL-safe base64 without padding: the
// form of session ids, reset tokens, OAuth states and PKCE verifiers.
func newSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// startSession creates a new session for u with a fresh id (SS4: whatever
// cookie the browser brought is never promoted) and sets the cookie. method
// is how the user signed in ("pwd" or the provider's name) and groups the
// comma-separated groups the sign-in earned (policy.Policy.Earned), kept on
// the record for the gate and X-Forwarded-Groups.
func (h *core) startSession(w http.ResponseWriter, r *http.Request, u storage.User, method, groups string) error {
	_, err := h.issueSession(w, r, u, h.newSignIn(method, groups))
	return err
}

// newSignIn is a new sign-in's part of its session: now, the absolute
// expiry after --session-ttl, how and with which groups.
func (h *core) newSignIn(method, groups string) storage.Session {
	now := h.now()
	return storage.Session{CreatedAt: now, ExpiresAt: now.Add(h.cfg.SessionTTL), Method: method, Groups: groups}
}

// reissueSession replaces the browser's session old with a new session id
// for u (a password change, the second-factor step: every re-issue goes
// through here). The new record is old's sign-in under a new id: it keeps
// the sign-in time, the absolute expiry, the groups and the factors, so
// that no action of the user extends --session-ttl or keeps groups a
// refresh took away; only the epoch (u's, after the change that asked
// for the re-issue), the email and the browser's address are current.
// grant, when the old session had one (a provider sign-in: grants.go), is
// carried over to the new session; the caller reads it before the change
// that deletes the old session.
func (h *core) reissueSession(w http.ResponseWriter, r *http.Request, u storage.User, old storage.Session, grant *storage.Grant) error {
	s, err := h.issueSession(w, r, u, reissued(old))
	if err != nil || grant == nil {
		return err
	}
	if err := h.keepGrant(r.Context(), s, *grant); err != nil {
		// A provider session without its grant would escape the
		// refresher and the provider's sign-out.
		return h.dropSession(r, s, err)
	}
	return nil
}

// reissued is the part of old a re-issued session keeps (see
// reissueSession); issueSession fills in the rest.
func reissued(old storage.Session) storage.Session {
	return storage.Session{
		CreatedAt:    old.CreatedAt,
		ExpiresAt:    old.ExpiresAt,
		Method:       old.Method,
		SecondFactor: old.SecondFactor,
		Groups:       old.Groups,
	}
}

// issueSession stores s for u under a fresh session id, replaces whatever
// session the browser brought and sets the cookie, with a Max-Age no longer
// than what is left of s's absolute lifetime. s brings the sign-in: its
// times, method, factors and groups; the rest comes from u and the request.
func (h *core) issueSession(w http.ResponseWriter, r *http.Request, u storage.User, s storage.Session) (storage.Session, error) {
	sessionID := newSecret()
	s.IDHash = storage.HashSecret(sessionID)
	s.UserID = u.ID
	s.Email = u.Email
	s.Epoch = u.Epoch
	s.LastSeen = h.now()
	s.IP = clientIPString(h.cfg.ClientIP(r))
	s.UserAgent = truncateUserAgent(r.UserAgent())
	if err := h.sessions.CreateSession(r.Context(), s); err != nil {
		return storage.Session{}, fmt.Errorf("create session: %w", err)
	}
	if old, ok := h.sessionCookie(r); ok {
		// The browser's previous session is replaced, not kept alongside.
		// Failing that, it lives on until it expires: worth a log line.
		if err := h.sessions.DeleteSession(r.Context(), storage.HashSecret(old)); err != nil {
			h.log.WarnContext(r.Context(), "delete replaced session", "user_id", u.ID, "err", err)
		}
	}
	h.endUnprefixedSession(w, r)
	http.SetCookie(w, h.cookie(sessionID, cookieMaxAge(s.ExpiresAt.Sub(s.LastSeen))))
	if u.Email != "" {
		// Every sign-in (password, OAuth, invite) marks this browser as
		// one that has signed in to the account before (DV1), and with
		// two factors whether it gave both (MF2).
		h.setDeviceCookie(w, r, storage.NormalizeEmail(u.Email), s.MultiFactor())
	}
	return s, nil
}

// cookieMaxAge is the session cookie's Max-Age for a session with left of
// its absolute lifetime: whole seconds, at least 1 (0 would mean "no
// Max-Age" and a negative one "expire now").
func cookieMaxAge(left time.Duration) int {
	return max(int(left/time.Second), 1)
}

// maxUserAgent bounds the browser description kept with a session.
const maxUserAgent = 256

// truncateUserAgent keeps at most maxUserAgent bytes of ua, cut at a rune
// boundary, for the account page and `gatehouse sessions list`.
func truncateUserAgent(ua string) string {
	if len(ua) <= maxUserAgent {
		return ua
	}
	cut := maxUserAgent
	for cut > 0 && !utf8.RuneStart(ua[cut]) {
		cut--
	}
	return ua[:cut]
}

// errCredentialsChanged: the account's credentials or state changed while
// the sign-in was being checked (a reset completed, the account was disabled
// or its sessions revoked); the sign-in made no session and must start over.
var errCredentialsChanged = web.NewProblem(http.StatusConflict, "credentials_changed",
	"Your account changed while you were signing in, sign in again")

// cookie is the session cookie (SS2): HttpOnly, SameSite=Lax, Path=/, Secure
// per flag, Max-Age no longer than the absolute lifetime; maxAge < 0 expires it.
func (h *core) cookie(value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name:     h.cfg.CookieName,
		Value:    value,
		Path:     "/",
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   h.cfg.CookieSecure,
		SameSite: http.SameSiteLaxMode,
		Domain:   h.cfg.CookieDomain, // --cookie-domain: apps on sibling hosts
	}
}

// unprefixedCookieName is the session cookie's name without its __Host- or
// __Secure- prefix, "" when it has none: browsers that signed in before the
// prefix (v1, an http deployment) may still hold a live session id under
// it. The proxy strips it (SS8); sign-in and sign-out end it.
func (h *core) unprefixedCookieName() string {
	for _, prefix := range []string{"__Host-", "__Secure-"} {
		if name, ok := strings.CutPrefix(h.cfg.CookieName, prefix); ok {
			return name
		}
	}
	return ""
}

// endUnprefixedSession deletes the session of the unprefixed cookie the
// browser brought, if any, and expires that cookie (SS4). A failure is
// logged: the session then lives until it expires, never read by the gate.
func (h *core) endUnprefixedSession(w http.ResponseWriter, r *http.Request) {
	name := h.unprefixedCookieName()
	if name == "" {
		return
	}
	c, err := r.Cookie(name)
	if err != nil {
		return
	}
	if c.Value != "" {
		if err := h.sessions.DeleteSession(r.Context(), storage.HashSecret(c.Value)); err != nil {
			h.log.WarnContext(r.Context(), "delete the unprefixed cookie's session", "err", err)
		}
	}
	expired := h.cookie("", -1)
	expired.Name = name
	http.SetCookie(w, expired)
}

// expireCookie tells the browser to drop the session cookie.
func (h *core) expireCookie(w http.ResponseWriter) {
	http.SetCookie(w, h.cookie("", -1))
}

// sessionCookie reads the session id, only ever from the Cookie header (SS7).
func (h *core) sessionCookie(r *http.Request) (string, bool) {
	c, err := r.Cookie(h.cfg.CookieName)
	if err != nil || c.Value == "" {
		return "", false
	}
	return c.Value, true
}

// errNoSession: the request carries no active session.
var errNoSession = errors.New("no active session")

// currentSession returns the request's active session, as the proxy's gate
// judges it (one check for the proxy, /auth/ and the check endpoints; activity
// here refreshes the idle timeout too). A store failure is returned as such
// (fail closed), a missing or inactive session as errNoSession.
func (h *core) currentSession(r *http.Request) (storage.Session, error) {
	s, ok, err := h.gate.Check(r)
	if err != nil {
		return storage.Session{}, err
	}
	if !ok {
		return storage.Session{}, errNoSession
	}
	return s, nil
}

// answerUnauthenticated answers 401 unauthenticated with a WWW-Authenticate
// header, exactly as the proxy does in --mode=401, whatever the mode.
func (h *core) answerUnauthenticated(w http.ResponseWriter, r *http.Request) {
	web.Denier{Mode: web.Mode401}.Deny(w, r)
}

// answerStoreFailure logs a store error and answers 503: fail closed.
func (h *core) answerStoreFailure(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, storage.ErrCredentialsChanged) {
		h.event(r, "sign_in_superseded")
		web.WriteProblem(w, r, errCredentialsChanged)
		return
	}
	h.log.ErrorContext(r.Context(), "store unavailable", "path", r.URL.Path, "err", err)
	web.WriteProblem(w, r, errStoreUnavailable)
}

// clientIPString is the address as shown on the account page, "" when unknown.
func clientIPString(ip netip.Addr) string {
	if !ip.IsValid() {
		return ""
	}
	return ip.String()
}
