// Package authflows answers everything under /auth/: password login and
// logout, password reset (forgot, reset), OAuth login, linking and callback,
// and the pages of those flows.
//
// Dependencies: authflows → storage (records, errors), proxy/web (problem
// answers, the --mode answer, client IP), proxy/policy (the access policy
// checked at every sign-in), authflows/audit and proxy for its session Gate only, so that a
// session means the same under /auth/ as on proxied paths. The proxy hands
// /auth/ requests to Handler as a plain http.Handler and never imports
// authflows. The store interface it needs (Store) is declared here.
package authflows

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/authflows/provider"
	"github.com/gatehouse-auth/gatehouse/proxy"
	"github.com/gatehouse-auth/gatehouse/proxy/policy"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// Store is what the flows need of the storage backend: the union of each
// flow's own interface (stores.go), not the whole storage.Store.
type Store interface {
	sessionStore
	loginStore
	deviceStore
	accountStore
	resetStore
	inviteStore
	oauthStore
}

// MaxBodyBytes caps every request body under /auth/ (PX6).
const MaxBodyBytes = web.MaxAuthBody

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
	HSTS              bool // send Strict-Transport-Security (Gatehouse terminates TLS)
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
	Gate       *proxy.Gate
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
}

// Handler serves /auth/. Build it with New.
type Handler struct {
	cfg     Config
	store   Store
	gate    *proxy.Gate
	log     *slog.Logger
	now     func() time.Time
	mux     *http.ServeMux
	handler http.Handler
	hasher  *password.Hasher
	limits  *limits
	metrics *metrics
	pages   *pages
	oauth   map[string]*provider.Provider
	// oauthStarts limits the flows a client IP may start with each
	// provider, so that unauthenticated requests cannot fill the store with
	// pending flows (DS1): at most flowStartBurst per flowStartPeriod.
	oauthStarts map[string]*keyedLimiter
	mails       *mailTemplates
	device      deviceKey // HMAC key of device cookies (DV1)
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
	if cfg.Hash == (password.HashParams{}) {
		cfg.Hash = password.DefaultHashParams
	}
	h := &Handler{cfg: cfg, store: cfg.Store, gate: cfg.Gate, log: cfg.Logger, now: cfg.Clock, mux: http.NewServeMux()}
	if h.gate == nil {
		h.gate = &proxy.Gate{Sessions: cfg.Store, CookieName: cfg.CookieName, IdleTTL: cfg.SessionIdleTTL, Clock: cfg.Clock}
	}
	var err error
	if h.metrics, err = newMetrics(cfg.Registerer); err != nil {
		return nil, err
	}
	if h.pages, err = loadPages(cfg.TemplatesDir, cfg.AppName); err != nil {
		return nil, err
	}
	if h.mails, err = loadMailTemplates(cfg.MailTemplates); err != nil {
		return nil, err
	}
	if h.oauth, err = provider.New(ctx, cfg.Providers, cfg.Clock); err != nil {
		return nil, err
	}
	h.oauthStarts = map[string]*keyedLimiter{}
	for name := range h.oauth {
		h.oauthStarts[name] = newKeyedLimiter(flowStartBurst, flowStartPeriod, cfg.Clock)
	}
	if h.hasher = cfg.Hasher; h.hasher == nil {
		h.hasher = password.NewHasher(cfg.Hash)
	}
	h.limits = newLimits(cfg.Clock)
	if cfg.SharedLimits != nil {
		onError := func(bucket string, err error) {
			h.log.Warn("throttle counted in this process only: shared store failed", "bucket", bucket, "err", err)
		}
		h.limits.share(cfg.SharedLimits, onError)
		for name, starts := range h.oauthStarts {
			starts.share(cfg.SharedLimits, "oauth_start_"+name, flowStartPeriod, onError)
		}
	}
	h.routes()
	h.handler = h.middleware(h.mux)
	return h, nil
}

// routes registers every endpoint of the contract; one file per flow.
func (h *Handler) routes() {
	m := h.mux
	m.HandleFunc("GET /auth/assets/style.css", h.serveStyle)
	m.HandleFunc("GET "+clearCacheAsset, h.serveClearCache)

	m.HandleFunc("GET /auth/login", h.loginPage)
	m.HandleFunc("POST /auth/login", h.login)
	m.HandleFunc("POST /auth/logout", h.logout)
	m.HandleFunc("GET /auth/me", h.me)

	m.HandleFunc("GET /auth/forgot", h.forgotPage)
	m.HandleFunc("POST /auth/forgot", h.forgot)
	m.HandleFunc("GET /auth/reset", h.resetPage)
	m.HandleFunc("POST /auth/reset", h.reset)
	m.HandleFunc("GET /auth/invite", h.invitePage)
	m.HandleFunc("POST /auth/invite", h.acceptInvite)

	m.HandleFunc("GET /auth/login/{provider}", h.oauthLogin)
	m.HandleFunc("GET /auth/link/{provider}", h.oauthLink)
	m.HandleFunc("DELETE /auth/link/{provider}", h.unlink)
	m.HandleFunc("GET /auth/unlink/{provider}", h.unlinkPage) // asks to confirm
	m.HandleFunc("POST /auth/unlink/{provider}", h.unlink)    // the confirm page's form
	m.HandleFunc("GET /auth/callback/{provider}", h.callback)
	m.HandleFunc("GET /auth/account", h.account)
	m.HandleFunc("POST /auth/account/password", h.changePassword)
	m.HandleFunc("POST /auth/account/sessions/revoke-others", h.signOutOthers)

	m.HandleFunc("/auth/", h.notFound)
}

// ServeHTTP answers a request under /auth/.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.handler.ServeHTTP(w, r) }

// middleware applies what holds for every /auth/ answer: never cached, body
// capped, cross-origin form posts refused, HSTS when Gatehouse serves HTTPS.
func (h *Handler) middleware(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.event(r, "cross_origin_refused", slog.String("path", r.URL.Path))
		web.WriteProblem(w, r, web.NewProblem(http.StatusForbidden, "cross_origin", "Cross-origin request refused"))
	}))
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
		if h.cfg.HSTS {
			hdr.Set("Strict-Transport-Security", "max-age=31536000")
		}
		if r.ContentLength > MaxBodyBytes {
			web.WriteProblem(w, r, errBodyTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		protected.ServeHTTP(w, r)
	})
}

func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	h.problem(w, r, web.NewProblem(http.StatusNotFound, "not_found", "Not found"))
}

// event writes one structured event line (LG2): the event name, the client IP
// and request id, plus attrs. Callers never pass secrets.
func (h *Handler) event(r *http.Request, name string, attrs ...slog.Attr) {
	base := []slog.Attr{slog.String("event", name), slog.String("client_ip", h.cfg.ClientIP(r).String())}
	if id := r.Header.Get("X-Request-Id"); id != "" {
		base = append(base, slog.String("request_id", id))
	}
	h.log.LogAttrs(r.Context(), slog.LevelInfo, "auth event", append(base, attrs...)...)
}
