// Package proxy is Gatehouse's request path: it removes identity headers
// that clients forge, cleans the path once, sends /auth/ to the auth
// handler, checks the session cookie against the store on every request,
// answers unauthenticated requests per --mode, and forwards the rest to the
// upstream with the identity headers set. It also owns the last-seen batcher,
// the upstream transport and the server timeouts.
//
// Dependencies: proxy → proxy/web, storage. It never imports authflows: the
// /auth/ handler arrives as an http.Handler, and the store as the two small
// interfaces declared here (SessionSource, SessionToucher).
package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// SessionSource looks up a session by the hash of its id. A missing record
// is storage.ErrNotFound; any other error makes the proxy fail closed.
type SessionSource interface {
	Session(ctx context.Context, idHash storage.Hash) (storage.Session, error)
}

// SessionToucher records when sessions were last seen; unknown ones are
// skipped. LastSeen calls it off the request path.
type SessionToucher interface {
	TouchSessions(ctx context.Context, lastSeen map[storage.Hash]time.Time) error
}

// DefaultCookieName is the session cookie's name when Config.CookieName is empty.
const DefaultCookieName = "gatehouse_session"

// DefaultUpstreamTimeout bounds the wait for the upstream's response
// headers when Config.UpstreamTimeout is zero.
const DefaultUpstreamTimeout = 60 * time.Second

// AuthBodyLimit caps request bodies under /auth/ (PX6).
const AuthBodyLimit = web.MaxAuthBody

// Config holds what a Proxy needs. Upstream, Auth and Sessions are required.
type Config struct {
	Upstream *url.URL     // the protected app; requests keep their path below its path
	Auth     http.Handler // serves /auth and everything under /auth/; never forwarded
	Sessions SessionSource
	// LastSeen, when set, is told about sessions whose stored LastSeen is
	// older than TouchInterval. Its Run loop writes them.
	LastSeen       *LastSeen
	CookieName     string   // default DefaultCookieName
	PublicPaths    []string // served without a session, matched at a segment boundary
	Denier         web.Denier
	TrustedProxies web.TrustedProxies
	IdleTTL        time.Duration // 0: no idle limit
	TLS            bool          // Gatehouse terminates TLS: X-Forwarded-Proto is https
	// UpstreamTimeout bounds the wait for the upstream's response headers
	// (504 past it); default DefaultUpstreamTimeout. Bodies, streams and
	// WebSockets are not cut.
	UpstreamTimeout time.Duration
	// Transport reaches the upstream; nil means NewTransport(UpstreamTimeout).
	Transport  http.RoundTripper
	Clock      func() time.Time // default time.Now
	Logger     *slog.Logger     // default slog.Default()
	Registerer prometheus.Registerer
}

// Proxy is the session gate in front of the upstream. It is an http.Handler.
type Proxy struct {
	upstream   *url.URL
	auth       http.Handler
	sessions   SessionSource
	lastSeen   *LastSeen
	cookieName string
	public     publicPaths
	denier     web.Denier
	trusted    web.TrustedProxies
	idleTTL    time.Duration
	proto      string
	clock      func() time.Time // nil: the system clock, read with the lookup timer
	logger     *slog.Logger
	metrics    *metrics
	reverse    *httputil.ReverseProxy
}

// New checks cfg, registers the metrics and builds the Proxy.
func New(cfg Config) (*Proxy, error) {
	if cfg.Upstream == nil || (cfg.Upstream.Scheme != "http" && cfg.Upstream.Scheme != "https") || cfg.Upstream.Host == "" {
		return nil, errors.New("proxy: upstream must be an http:// or https:// URL with a host")
	}
	if cfg.Auth == nil || cfg.Sessions == nil {
		return nil, errors.New("proxy: Auth and Sessions are required")
	}
	switch cfg.Denier.Mode {
	case web.Mode401:
	case web.ModeRedirect:
		if cfg.Denier.BaseURL == nil {
			return nil, errors.New("proxy: redirect mode needs Denier.BaseURL")
		}
	default:
		return nil, fmt.Errorf("proxy: unknown mode %q", cfg.Denier.Mode)
	}
	public, err := parsePublicPaths(cfg.PublicPaths)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	if cfg.LastSeen != nil && cfg.LastSeen.TouchEvery == 0 {
		// An active session must never look idle in the store.
		cfg.LastSeen.TouchEvery = TouchIntervalFor(cfg.IdleTTL)
	}
	p := &Proxy{
		upstream:   cfg.Upstream,
		auth:       cfg.Auth,
		sessions:   cfg.Sessions,
		lastSeen:   cfg.LastSeen,
		cookieName: cfg.CookieName,
		public:     public,
		denier:     cfg.Denier,
		trusted:    cfg.TrustedProxies,
		idleTTL:    cfg.IdleTTL,
		proto:      "http",
		clock:      cfg.Clock,
		logger:     cfg.Logger,
		metrics:    m,
	}
	if p.cookieName == "" {
		p.cookieName = DefaultCookieName
	}
	if cfg.TLS {
		p.proto = "https"
	}
	if p.logger == nil {
		p.logger = slog.Default()
	}
	transport := cfg.Transport
	if transport == nil {
		timeout := cfg.UpstreamTimeout
		if timeout <= 0 {
			timeout = DefaultUpstreamTimeout
		}
		transport = NewTransport(timeout)
	}
	p.reverse = &httputil.ReverseProxy{
		Rewrite:        p.rewrite,
		Transport:      transport,
		BufferPool:     bufferPool{},
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.upstreamError,
		ErrorLog:       slog.NewLogLogger(p.logger.Handler(), slog.LevelWarn),
	}
	return p, nil
}

var (
	storeUnavailable = web.NewProblem(http.StatusServiceUnavailable, "store_unavailable", "Service temporarily unavailable")
	bodyTooLarge     = web.NewProblem(http.StatusRequestEntityTooLarge, "request_too_large", "Request body too large")
)

// ServeHTTP runs the steps of the request path in order.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// 1. Forged identity and routing headers go, on every path (PX1, PX4),
	// and the request gets the id its log lines share (LG2).
	removeClientHeaders(r.Header)
	p.setRequestID(r)

	// 2. One cleaned path for the decision and the forwarded request (PX5).
	r = withCleanPath(r)

	// 3. /auth/ is Gatehouse's own and never reaches the upstream.
	if isAuthPath(r.URL.Path) {
		p.serveAuth(w, r)
		return
	}

	// 4. The session, read from the store on every request (SS3, SS7, SS9).
	session, signedIn, err := p.session(r)
	if err != nil {
		p.metrics.failed.Inc()
		p.logger.LogAttrs(r.Context(), slog.LevelError, "session store unavailable",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.String("request_id", requestID(r)), slog.String("error", err.Error()))
		web.WriteProblem(w, r, storeUnavailable)
		return
	}

	// 5. Public paths pass with or without a session.
	public := p.public.match(r.URL.Path)

	// 6. Protected without a session: the --mode answer, nothing forwarded.
	if !signedIn && !public {
		p.deny(w, r)
		return
	}

	// 7. Forward, with the identity of a valid session.
	p.forward(w, r, session, signedIn, public)
}

func (p *Proxy) serveAuth(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > AuthBodyLimit {
		web.WriteProblem(w, r, bodyTooLarge)
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(w, r.Body, AuthBodyLimit)
	}
	p.auth.ServeHTTP(w, r)
}

func (p *Proxy) deny(w http.ResponseWriter, r *http.Request) {
	if p.denier.Mode == web.ModeRedirect && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		p.metrics.redirected.Inc()
	} else {
		p.metrics.unauthenticated.Inc()
	}
	p.denier.Deny(w, r)
}

func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, session storage.Session, signedIn, public bool) {
	state := &forwardState{Context: r.Context(), signedIn: signedIn}
	if signedIn {
		state.userID, state.email = session.UserID, session.Email
	}
	p.reverse.ServeHTTP(w, r.WithContext(state))
	switch {
	case state.failed:
		p.metrics.failed.Inc()
	case public:
		p.metrics.public.Inc()
	default:
		p.metrics.forwarded.Inc()
	}
}

// forwardState carries one forwarded request's identity to Rewrite and its
// failure to the metrics. It is the request's context itself, so passing it
// costs one allocation, not a context node plus a value.
type forwardState struct {
	context.Context
	userID, email string
	signedIn      bool
	failed        bool      // set by the ErrorHandler
	values        [5]string // backing array of the header values rewrite sets
}

type forwardStateKey struct{}

func (s *forwardState) Value(key any) any {
	if key == (forwardStateKey{}) {
		return s
	}
	return s.Context.Value(key)
}

func stateOf(ctx context.Context) *forwardState {
	s, _ := ctx.Value(forwardStateKey{}).(*forwardState)
	return s
}
