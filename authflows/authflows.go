// Package authflows answers everything under /auth/: one router (Handler)
// over the flows, each a type holding only the store interface it uses,
// declared beside it: password sign-in and sign-out (signInFlow, login.go),
// forgot password and reset (resetFlow, reset.go), invitations (inviteFlow,
// invite.go), the account page (accountFlow, account.go), OAuth sign-in and
// linking (oauthFlow, oauth_start.go, oauth_callback.go), the second factor
// and passkeys (twoFactorFlow, twofactor*.go), provider sessions checked
// again (refreshFlow, refresh.go), OIDC back-channel logout
// (backchannelFlow, backchannel.go), and the mail jobs the queue prepares
// at delivery (mailjobs.go). What they share (sessions and their re-issue,
// provider grants, the device cookie, throttles, pages, events) is core
// (core.go, session.go, grants.go).
//
// Dependencies: authflows → authflows/audit, authflows/mail,
// authflows/password, authflows/provider, authflows/seal,
// authflows/secondfactor, proxy/session, proxy/policy, proxy/web, storage.
// proxy/session is its session Gate, so that a session
// means the same under /auth/ as on proxied paths; the proxy hands /auth/
// requests to Handler as a plain http.Handler and never imports authflows.
package authflows

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/authflows/provider"
	"github.com/gatehouse-auth/gatehouse/authflows/seal"
	"github.com/gatehouse-auth/gatehouse/proxy/policy"
	"github.com/gatehouse-auth/gatehouse/proxy/session"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// Store is what the flows need of the storage backend: the union of each
// flow's own interface, declared beside the flow that uses it
// (signInStore in login.go, resetStore in reset.go, …), not the whole
// storage.Store.
type Store interface {
	sessionStore
	deviceStore
	signInStore
	accountStore
	resetStore
	inviteStore
	oauthStore
	noticeStore
	twoFactorStore
	grantStore
	refreshStore
	backchannelStore
}

// Config holds the settings and the dependencies of the flows.
type Config struct {
	BaseURL           *url.URL // the only source of absolute URLs
	CookieName        string
	CookieSecure      bool
	SessionTTL        time.Duration
	SessionIdleTTL    time.Duration
	ResetTokenTTL     time.Duration
	InviteTTL         time.Duration // lifetime of an invitation link (default 72h)
	PasswordMinLength int
	// CookieDomain is the session cookie's Domain attribute; empty: host-only.
	CookieDomain string
	// AllowedRedirectHosts may be named by an absolute rd after sign-in,
	// beside BaseURL's host (lower case, no port).
	AllowedRedirectHosts []string

	Hash password.HashParams // argon2id cost; production uses password.DefaultHashParams
	// Hasher hashes and verifies passwords; nil: one with Hash and the
	// production limits.
	Hasher *password.Hasher

	Providers []provider.Config // configured OAuth providers

	// Policy decides who may sign in (nil: no policy). With it on, every
	// sign-in must pass it; an unknown OAuth identity becomes an account
	// only when it passes.
	Policy *policy.Policy
	// OpenSignup lets any verified email create an account at its first
	// OAuth sign-in when no policy is on. Without it, and without a
	// policy, sign-up is closed (403 signup_closed).
	OpenSignup bool
	// ProvidersOnly makes the sign-in page SSO-only when a provider is
	// configured (--password-sign-in=false): the provider buttons and no
	// password form; a password sign-in is refused (403
	// password_sign_in_off). Without a provider it changes nothing.
	ProvidersOnly bool

	// MailTemplates is a directory whose files override the embedded mail templates.
	MailTemplates string
	// TemplatesDir is a directory whose files override embedded page
	// (NAME.html, style.css) and mail (NAME.*.tmpl) templates by file name;
	// MailTemplates, when set, wins for mails.
	TemplatesDir string
	// AppName is shown in page titles, headings and mail subjects; the
	// host of BaseURL when empty.
	AppName string
	// WakeMailer is called after mail was queued so that delivery starts at once.
	WakeMailer func()

	Store Store
	// Gate is the session check shared with the proxy; nil: one built from
	// Store, CookieName, SessionIdleTTL and Clock (without last-seen writes).
	Gate       *session.Gate
	Denier     web.Denier                     // answers link requests without a session, per --mode
	ClientIP   func(*http.Request) netip.Addr // client address behind trusted proxies
	Clock      func() time.Time
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// Audit receives the audit events of the flows; nil records none.
	Audit *audit.Log

	// SharedLimits, when set, counts the throttles in a store that several
	// replicas share; nil: each process counts in memory.
	SharedLimits RateStore

	// SecondFactor is --second-factor (default SecondFactorOptional).
	SecondFactor SecondFactorPolicy
	// WebAuthnRPID is --webauthn-rp-id; empty: the host of BaseURL, and
	// passkeys off when that host is an IP address.
	WebAuthnRPID string

	// TokenKey seals the provider tokens a sign-in keeps (--token-key-file);
	// nil keeps none, and provider sessions are not checked again.
	TokenKey *seal.Key
	// SessionRefresh is how often a provider session is checked again with
	// its provider (--session-refresh); 0 never.
	SessionRefresh time.Duration
	// OIDCLogout sends a browser signing out of an oidc session on to the
	// OpenID Provider's end_session_endpoint (--oidc-logout).
	OIDCLogout bool
}

// Handler serves /auth/: one router over the flows, each a type of its
// own that holds the store interface it needs and shares the rest (core).
// Build it with New.
//
// A new flow (a second factor, a provider-session refresh) is one more
// such type in a file of its own: a field here, its store interface in
// Store, its construction in NewContext and its endpoints in routes.
type Handler struct {
	*core
	mux     *http.ServeMux
	handler http.Handler

	signIn      *signInFlow      // password sign-in, sign-out, /auth/me (login.go)
	reset       *resetFlow       // forgot password and reset (reset.go)
	invite      *inviteFlow      // invitations (invite.go)
	account     *accountFlow     // the account page (account.go, account_sessions.go)
	oauth       *oauthFlow       // OAuth sign-in and linking (oauth_start.go, oauth_callback.go)
	notices     *passwordNotices // the "password changed" mail (mailjobs.go)
	second      *twoFactorFlow   // the second factor and passkeys (twofactor*.go)
	refresh     *refreshFlow     // provider sessions checked again (refresh.go)
	backchannel *backchannelFlow // OIDC back-channel logout (backchannel.go)
}

// New checks cfg and builds the handler.
func New(cfg Config) (*Handler, error) { return NewContext(context.Background(), cfg) }

// NewContext is New with a context that bounds the calls made at start
// (OIDC discovery, retried for up to 30 s).
func NewContext(ctx context.Context, cfg Config) (*Handler, error) {
	if cfg.Store == nil || cfg.BaseURL == nil || cfg.CookieName == "" {
		return nil, errors.New("authflows: Store, BaseURL and CookieName are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ClientIP == nil {
		var none web.TrustedProxies
		cfg.ClientIP = none.ClientIP
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	if cfg.WakeMailer == nil {
		cfg.WakeMailer = func() {}
	}
	if cfg.InviteTTL <= 0 {
		cfg.InviteTTL = 72 * time.Hour
	}
	if cfg.AppName == "" {
		cfg.AppName = cfg.BaseURL.Host
	}
	if cfg.MailTemplates == "" {
		cfg.MailTemplates = cfg.TemplatesDir
	}
	if cfg.SecondFactor == "" {
		cfg.SecondFactor = SecondFactorOptional
	}
	if cfg.Hash == (password.HashParams{}) {
		cfg.Hash = password.DefaultHashParams
	}
	c := &core{cfg: cfg, sessions: cfg.Store, secrets: cfg.Store, grants: cfg.Store, gate: cfg.Gate, log: cfg.Logger, now: cfg.Clock}
	if c.gate == nil {
		c.gate = &session.Gate{Sessions: cfg.Store, CookieName: cfg.CookieName, IdleTTL: cfg.SessionIdleTTL, Clock: cfg.Clock}
	}
	var err error
	if c.metrics, err = newMetrics(cfg.Registerer); err != nil {
		return nil, err
	}
	if c.pages, err = loadPages(cfg.TemplatesDir, cfg.AppName); err != nil {
		return nil, err
	}
	if c.mails, err = loadMailTemplates(cfg.MailTemplates); err != nil {
		return nil, err
	}
	providers := slices.Clone(cfg.Providers)
	for i := range providers {
		// Ask for refresh tokens only where they will be kept and used.
		providers[i].Offline = cfg.TokenKey != nil && cfg.SessionRefresh > 0
	}
	if c.providers, err = provider.New(ctx, providers, cfg.Clock); err != nil {
		return nil, err
	}
	if c.hasher = cfg.Hasher; c.hasher == nil {
		c.hasher = password.NewHasher(cfg.Hash)
	}
	c.limits = newLimits(cfg.Clock)
	oauth := newOAuthFlow(c, cfg.Store)
	if cfg.SharedLimits != nil {
		onError := func(bucket string, err error) {
			c.log.Warn("throttle counted in this process only: shared store failed", "bucket", bucket, "err", err)
		}
		c.limits.share(cfg.SharedLimits, onError)
		oauth.shareLimits(cfg.SharedLimits, onError)
	}
	second, err := newTwoFactorFlow(c, cfg.Store)
	if err != nil {
		return nil, err
	}
	oauth.second = second
	h := &Handler{
		core:        c,
		mux:         http.NewServeMux(),
		second:      second,
		signIn:      &signInFlow{core: c, store: cfg.Store, second: second},
		reset:       &resetFlow{core: c, store: cfg.Store},
		invite:      &inviteFlow{core: c, store: cfg.Store, second: second},
		account:     &accountFlow{core: c, store: cfg.Store, second: second},
		oauth:       oauth,
		notices:     &passwordNotices{core: c, store: cfg.Store},
		backchannel: &backchannelFlow{core: c, store: cfg.Store},
	}
	if h.refresh, err = newRefreshFlow(c, cfg.Store, cfg.Registerer); err != nil {
		return nil, err
	}
	h.routes()
	h.handler = h.middleware(h.mux)
	return h, nil
}

// routes registers every endpoint of the contract, each on its flow.
func (h *Handler) routes() {
	m := h.mux
	m.HandleFunc("GET /auth/assets/style.css", h.serveStyle)
	m.HandleFunc("GET "+clearCacheAsset, h.serveClearCache)

	m.HandleFunc("GET /auth/login", h.signIn.loginPage)
	m.HandleFunc("POST /auth/login", h.signIn.login)
	m.HandleFunc("POST /auth/logout", h.signIn.logout)
	m.HandleFunc("GET /auth/me", h.signIn.me)

	m.HandleFunc("GET /auth/forgot", h.reset.forgotPage)
	m.HandleFunc("POST /auth/forgot", h.reset.forgot)
	m.HandleFunc("GET /auth/reset", h.reset.resetPage)
	m.HandleFunc("POST /auth/reset", h.reset.reset)
	m.HandleFunc("GET /auth/invite", h.invite.invitePage)
	m.HandleFunc("POST /auth/invite", h.invite.acceptInvite)

	m.HandleFunc("GET /auth/login/{provider}", h.oauth.oauthLogin)
	m.HandleFunc("GET /auth/link/{provider}", h.oauth.oauthLink)
	m.HandleFunc("DELETE /auth/link/{provider}", h.account.unlink)
	m.HandleFunc("GET /auth/unlink/{provider}", h.account.unlinkPage) // asks to confirm
	m.HandleFunc("POST /auth/unlink/{provider}", h.account.unlink)    // the confirm page's form
	m.HandleFunc("GET /auth/callback/{provider}", h.oauth.callback)
	m.HandleFunc("GET /auth/account", h.account.account)
	m.HandleFunc("POST /auth/account/password", h.account.changePassword)
	m.HandleFunc("POST /auth/account/sessions/revoke-others", h.account.signOutOthers)

	m.HandleFunc("GET /auth/2fa", h.second.page)
	m.HandleFunc("POST /auth/2fa", h.second.verify)
	m.HandleFunc("POST /auth/2fa/totp", h.second.enrol)
	m.HandleFunc("POST /auth/2fa/totp/confirm", h.second.confirmEnrol)
	m.HandleFunc("POST /auth/2fa/passkey/begin", h.second.stepBegin)
	m.HandleFunc("POST /auth/2fa/passkey/finish", h.second.stepFinish)
	m.HandleFunc("GET /auth/account/factors", h.second.listFactors)
	m.HandleFunc("POST /auth/account/totp", h.second.beginTOTP)
	m.HandleFunc("POST /auth/account/totp/confirm", h.second.confirmTOTP)
	m.HandleFunc("DELETE /auth/account/factors/{id}", h.second.removeFactor)
	m.HandleFunc("POST /auth/account/factors/{id}/remove", h.second.removeFactor) // the account page's form
	m.HandleFunc("POST /auth/account/recovery-codes", h.second.regenerateCodes)
	m.HandleFunc("POST /auth/passkey/register/begin", h.second.registerBegin)
	m.HandleFunc("POST /auth/passkey/register/finish", h.second.registerFinish)
	m.HandleFunc("POST /auth/passkey/login/begin", h.second.loginBegin)
	m.HandleFunc("POST /auth/passkey/login/finish", h.second.loginFinish)
	m.HandleFunc("GET /auth/assets/passkey.js", h.servePasskeyScript)

	m.HandleFunc("POST "+BackchannelLogoutPath, h.backchannel.logout)

	m.HandleFunc("/auth/", h.notFound)
}

// ServeHTTP answers a request under /auth/.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.handler.ServeHTTP(w, r) }

// middleware applies what holds for every /auth/ answer: never cached, body
// capped, cross-origin form posts refused (HSTS is the HTTPS listener's, in cmd/gatehouse).
func (h *Handler) middleware(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.event(r, "cross_origin_refused", slog.String("path", r.URL.Path))
		web.WriteProblem(w, r, web.NewProblem(http.StatusForbidden, "cross_origin", "Cross-origin request refused"))
	}))
	// The OpenID Provider's back-channel logout is a server's POST that
	// carries its own credential (the logout token): no browser, no
	// Origin to check. This path alone is exempt.
	cop.AddInsecureBypassPattern("POST " + BackchannelLogoutPath)
	protected := cop.Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr := w.Header()
		web.NoStore(hdr)
		hdr.Set("X-Content-Type-Options", "nosniff")
		hdr.Set("X-Frame-Options", "DENY")
		// same-origin, not no-referrer: under no-referrer a browser sends
		// "Origin: null" with a form post, and on a plain-http host other
		// than localhost (no Sec-Fetch-Site there) the cross-origin check
		// would refuse Gatehouse's own forms. Other sites still learn
		// nothing. The reset and invitation flows, whose page URL holds a
		// token, keep no-referrer (RT5).
		if r.URL.Path == "/auth/reset" || r.URL.Path == "/auth/invite" {
			hdr.Set("Referrer-Policy", "no-referrer")
		} else {
			hdr.Set("Referrer-Policy", "same-origin")
		}
		if r.ContentLength > web.MaxAuthBody {
			if r.URL.Path == BackchannelLogoutPath { // a server: JSON, and its own code
				writeJSONProblem(w, errLogoutRequest)
				return
			}
			web.WriteProblem(w, r, web.BodyTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, web.MaxAuthBody)
		protected.ServeHTTP(w, r)
	})
}

func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	h.problem(w, r, web.NewProblem(http.StatusNotFound, "not_found", "Not found"))
}
