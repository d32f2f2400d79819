// Package proxy is Gatehouse's request path: it removes identity headers
// that clients forge, cleans the path once, sends /auth/ to the auth
// handler, checks the session on every request (with proxy/session's Gate,
// the one session check it shares with the /auth/ handlers), answers
// unauthenticated requests per --mode, and forwards the rest to the
// upstream with the identity headers set (and, when configured, the signed
// identity assertion). The forward-auth check endpoints (forwardauth.go)
// give a fronting proxy the same decision. It also owns the upstream
// transport, the access log, the metrics and the server timeouts.
//
// Dependencies: proxy → proxy/session, proxy/route (the route rules),
// proxy/bearer (its Identity and errors; the Verifier arrives as
// BearerVerifier), proxy/web, storage. Only
// cmd/gatehouse imports proxy. It never imports authflows: the /auth/
// handler arrives as an http.Handler, the session store as
// session.SessionSource, and the access policy (proxy/policy) as
// AccessPolicy, declared here.
package proxy

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-auth/gatehouse/proxy/session"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// AccessPolicy decides whether a session's user may get in, from the
// session record and memory only (policy.Policy; AP2). A disabled user has
// no session left, so the gate passes disabled=false.
type AccessPolicy interface {
	Passes(email string, disabled bool, groups string) bool
}

// Assertions mints the signed identity assertion of a session (see package
// proxy/assertion). Token must be cheap when it hands out a cached token:
// it runs on the request path.
type Assertions interface {
	Token(s storage.Session) (string, error)
}

// AssertionHeader carries the signed identity assertion to the upstream.
const AssertionHeader = "X-Gatehouse-Jwt-Assertion"

// DefaultCookieName is the session cookie's name when Config.CookieName is empty.
const DefaultCookieName = "gatehouse_session"

// DefaultUpstreamTimeout bounds the wait for the upstream's response
// headers when Config.UpstreamTimeout is zero.
const DefaultUpstreamTimeout = 60 * time.Second

// Config holds what a Proxy needs. Upstream, Auth and Sessions are required.
type Config struct {
	Upstream *url.URL     // the protected app; requests keep their path below its path
	Auth     http.Handler // serves /auth and everything under /auth/; never forwarded
	Sessions session.SessionSource
	// LastSeen, when set, is told about sessions whose stored LastSeen is
	// older than TouchInterval. Its Run loop writes them.
	LastSeen *session.LastSeen
	// Policy, when set, is checked on every request with a session:
	// refused, a protected path answers 403 access_denied and a public path
	// is served as to nobody (see decide).
	Policy AccessPolicy
	// Gate, when set, is the session check shared with the /auth/ handlers;
	// nil: one built from Sessions, LastSeen, CookieName, IdleTTL and Clock.
	Gate       *session.Gate
	CookieName string // default DefaultCookieName
	// OwnCookies are Gatehouse's other cookies that browsers send on every
	// path (the __Host- OAuth transaction cookie): stripped before
	// forwarding, as the session cookie is (SS8).
	OwnCookies []string
	// Routes is the route table in force (route.Live): what each path
	// needs, --public-path first. nil: every path needs a session.
	Routes RouteRules
	// Bearer, when set, judges Authorization: Bearer credentials on routes
	// with tokens: true (bearer.Verifier); nil: they are ignored
	// everywhere. Throttle, when set, counts the invalid ones per client.
	Bearer         BearerVerifier
	Throttle       BearerThrottle
	Denier         web.Denier
	TrustedProxies web.TrustedProxies
	IdleTTL        time.Duration // 0: no idle limit
	TLS            bool          // Gatehouse terminates TLS: X-Forwarded-Proto is https
	// UpstreamTimeout bounds the wait for the upstream's response headers
	// (504 past it); default DefaultUpstreamTimeout. Bodies, streams and
	// WebSockets are not cut.
	UpstreamTimeout time.Duration
	// Transport reaches the upstream; nil means NewTransport(UpstreamTimeout).
	Transport http.RoundTripper
	// Assertions, when set, adds AssertionHeader to every forwarded
	// request with a session (--identity-assertion).
	Assertions Assertions
	// ForwardAuthTrusted turns on the check endpoints (ForwardAuthPath,
	// AuthRequestPath) for these peers; empty: off (they answer 404).
	ForwardAuthTrusted web.TrustedProxies
	// BaseURL is the public URL of Gatehouse, the base of the sign-in
	// address the check endpoints answer; default Denier.BaseURL.
	BaseURL *url.URL
	// AccessLog, when set, gets one line per request (--access-log).
	AccessLog  *AccessLog
	Clock      func() time.Time // default time.Now
	Logger     *slog.Logger     // default slog.Default()
	Registerer prometheus.Registerer
}

// Proxy is the session gate in front of the upstream. It is an http.Handler.
type Proxy struct {
	upstream   *url.URL
	auth       http.Handler
	gate       *session.Gate
	policy     AccessPolicy
	cookieName string
	// ownCookies are Gatehouse's cookies (SS8): never forwarded to the
	// upstream, never set or cleared by it. cookieName, then cookieName
	// without its __Host- or __Secure- prefix (the name browsers that
	// signed in before the prefix, v1 or an http deployment, still send a
	// live session id under), then Config.OwnCookies.
	ownCookies []string
	routes     RouteRules
	bearer     BearerVerifier
	throttle   BearerThrottle
	clock      func() time.Time
	denier     web.Denier
	trusted    web.TrustedProxies
	assertions Assertions
	checkPeers web.TrustedProxies
	baseURL    *url.URL
	proto      string
	logger     *slog.Logger
	metrics    *metrics
	access     *AccessLog
	// reverse is the configuration of the one forwarding engine; each
	// pooled forwarding runs a copy with its own Rewrite and
	// ModifyResponse (see forward.go).
	reverse     *httputil.ReverseProxy
	forwardings sync.Pool // of *forwarding
	// authBodyTimeout bounds reading a body under /auth/: AuthBodyTimeout.
	authBodyTimeout time.Duration
}

// New checks cfg, registers the metrics and builds the Proxy.
func New(cfg Config) (*Proxy, error) {
	if cfg.Upstream == nil || (cfg.Upstream.Scheme != "http" && cfg.Upstream.Scheme != "https") || cfg.Upstream.Host == "" {
		return nil, errors.New("proxy: upstream must be an http:// or https:// URL with a host")
	}
	if cfg.Auth == nil || (cfg.Sessions == nil && cfg.Gate == nil) {
		return nil, errors.New("proxy: Auth and Sessions (or Gate) are required")
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
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	// An active session must never look idle in the store: the touch
	// interval follows the idle limit, whether the LastSeen comes alone or
	// with a shared Gate.
	if cfg.LastSeen != nil && cfg.LastSeen.TouchEvery == 0 {
		cfg.LastSeen.TouchEvery = session.TouchIntervalFor(cfg.IdleTTL)
	}
	if g := cfg.Gate; g != nil && g.LastSeen != nil && g.LastSeen.TouchEvery == 0 {
		g.LastSeen.TouchEvery = session.TouchIntervalFor(g.IdleTTL)
	}
	p := &Proxy{
		upstream:   cfg.Upstream,
		auth:       cfg.Auth,
		gate:       cfg.Gate,
		policy:     cfg.Policy,
		cookieName: cmp.Or(cfg.CookieName, DefaultCookieName),
		routes:     cfg.Routes,
		bearer:     cfg.Bearer,
		throttle:   cfg.Throttle,
		clock:      cfg.Clock,
		denier:     cfg.Denier,
		trusted:    cfg.TrustedProxies,
		assertions: cfg.Assertions,
		checkPeers: cfg.ForwardAuthTrusted,
		baseURL:    cmp.Or(cfg.BaseURL, cfg.Denier.BaseURL),
		proto:      "http",
		logger:     cmp.Or(cfg.Logger, slog.Default()),
		metrics:    m,
		access:     cfg.AccessLog,

		authBodyTimeout: AuthBodyTimeout,
	}
	p.ownCookies = []string{p.cookieName}
	for _, prefix := range []string{"__Host-", "__Secure-"} {
		if name, ok := strings.CutPrefix(p.cookieName, prefix); ok && name != "" {
			p.ownCookies = append(p.ownCookies, name)
		}
	}
	for _, name := range cfg.OwnCookies {
		if name != "" && !slices.Contains(p.ownCookies, name) {
			p.ownCookies = append(p.ownCookies, name)
		}
	}
	if len(p.checkPeers) > 0 && p.baseURL == nil {
		return nil, errors.New("proxy: the check endpoints need BaseURL")
	}
	if p.gate == nil {
		p.gate = &session.Gate{Sessions: cfg.Sessions, CookieName: p.cookieName, IdleTTL: cfg.IdleTTL, LastSeen: cfg.LastSeen, Clock: cfg.Clock}
	}
	if p.gate.Lookup == nil {
		p.gate.Lookup = m.lookup
	}
	if cfg.TLS {
		p.proto = "https"
	}
	transport := cfg.Transport
	if transport == nil {
		transport = NewTransport(cmp.Or(max(cfg.UpstreamTimeout, 0), DefaultUpstreamTimeout))
	}
	p.reverse = &httputil.ReverseProxy{
		Transport:    transport,
		BufferPool:   bufferPool{},
		ErrorHandler: p.upstreamError,
		// What ReverseProxy logs itself (a body copy that failed) is
		// logged with the request's id by guardedBody and upstreamError.
		ErrorLog: slog.NewLogLogger(p.logger.Handler(), slog.LevelDebug),
	}
	p.forwardings.New = func() any { return p.newForwarding() }
	return p, nil
}

var storeUnavailable = web.NewProblem(http.StatusServiceUnavailable, "store_unavailable", "Service temporarily unavailable")

// serve runs the steps of the request path in order.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) served {
	// 0. The check endpoints of forward-auth read the forwarded headers
	// that step 1 removes; they forward nothing.
	if len(p.checkPeers) > 0 && isCheckPath(r) {
		p.serveCheck(w, r)
		return served{outcome: outcomeCheck, path: r.URL.Path}
	}

	// 1. Forged identity and routing headers go, on every path (PX1, PX4,
	// RH1), and the request gets the id its log lines share (LG2).
	removeClientHeaders(r.Header, p.peerTrusted(r))
	dropUpgrade(r) // only WebSocket may upgrade (UP1)
	p.setRequestID(r)

	// 2. One cleaned path for the decision and the forwarded request (PX5).
	r = withCleanPath(r)

	// 3. /auth/ is Gatehouse's own and never reaches the upstream.
	if isAuthPath(r.URL.Path) {
		p.serveAuth(w, r)
		return served{outcome: outcomeAuth, path: r.URL.Path}
	}

	// 4. The decision: route, session (read from the store on every
	// request: SS3, SS7, SS9) and access policy (AP2), on the cleaned
	// path and the request's own method and Host (PX4, PX5).
	d := p.decide(r, target{method: r.Method, host: r.Host, path: r.URL.Path})
	switch d.verdict {
	case verdictUnavailable:
		p.metrics.failed.Inc()
		p.logger.LogAttrs(r.Context(), slog.LevelError, unavailableMessage(d),
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.String("request_id", requestID(r)), slog.String("error", d.err.Error()))
		web.WriteProblem(w, r, storeUnavailable)
		return served{outcome: outcomeError, path: r.URL.Path}
	case verdictDenied:
		p.metrics.refused.Inc()
		p.refuse(w, r, d)
		return served{outcome: outcomeRefused, path: r.URL.Path, userID: d.session.UserID}
	case verdictSignIn: // the --mode answer, nothing forwarded
		return served{outcome: p.deny(w, r), path: r.URL.Path}
	case verdictReauth: // sign in again, or give the second factor
		return served{outcome: p.reauthenticate(w, r, d.reauth), path: r.URL.Path, userID: d.session.UserID}
	}

	// 5. Forward, with the identity of the session when it counts.
	return served{outcome: p.forward(w, r, d), path: r.URL.Path, userID: d.session.UserID}
}

func (p *Proxy) deny(w http.ResponseWriter, r *http.Request) outcome {
	o := outcomeUnauthenticated
	if p.denier.Mode == web.ModeRedirect && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		p.metrics.redirected.Inc()
		o = outcomeRedirected
	} else {
		p.metrics.unauthenticated.Inc()
	}
	p.denier.Deny(w, r)
	return o
}
