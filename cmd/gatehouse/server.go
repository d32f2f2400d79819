package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gatehouse-auth/gatehouse/authflows"
	"github.com/gatehouse-auth/gatehouse/authflows/admin"
	"github.com/gatehouse-auth/gatehouse/authflows/audit"
	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/authflows/provider"
	"github.com/gatehouse-auth/gatehouse/proxy"
	"github.com/gatehouse-auth/gatehouse/proxy/assertion"
	"github.com/gatehouse-auth/gatehouse/proxy/bearer"
	"github.com/gatehouse-auth/gatehouse/proxy/policy"
	"github.com/gatehouse-auth/gatehouse/proxy/route"
	"github.com/gatehouse-auth/gatehouse/proxy/session"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// server is one running Gatehouse: the store, the proxy with the auth flows
// behind it, the admin listener and the background loops.
type server struct {
	cfg      Config
	log      *slog.Logger
	store    storage.Store
	handler  http.Handler // the proxy, /auth/ included
	auth     *authflows.Handler
	admin    http.Handler
	lastSeen *session.LastSeen
	policy   *policy.Policy
	// routes is the route table in force: the proxy's rules (Rules), which
	// the reloader of the configuration file replaces (nil without one).
	routes   *route.Live
	reloader *reloader
	// verifier judges bearer credentials on routes with tokens: true; nil
	// when no rule can ask for them (no such rule, no configuration file
	// to add one, no --bearer-jwt-issuer).
	verifier *bearer.Verifier
	keys     *assertion.Keys   // nil with --identity-assertion=false
	issuer   *assertion.Issuer // nil with --identity-assertion=false
	mailer   mailer
	tls      *tlsServing
	writes   *writeHealth
	ready    atomic.Bool
	// adminAPI is served on --admin-socket; audit is the --audit-log trail.
	adminAPI   http.Handler
	audit      *audit.Log
	closeAudit func() error
	accessLog  *proxy.AccessLog // nil with --access-log=false
}

// newServer opens the store and builds every part; it opens no port.
func newServer(ctx context.Context, cfg Config, logger *slog.Logger) (*server, error) {
	writes := newWriteHealth(logger, time.Now)
	store, err := openServerStore(cfg.DB, logger, writes.observe, cfg.SessionIdleTTL)
	if err != nil {
		return nil, err
	}
	s := &server{cfg: cfg, log: logger, store: store, writes: writes, closeAudit: func() error { return nil }}
	if err := s.build(ctx); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// build makes every part of the server, in the order they need each other.
func (s *server) build(ctx context.Context) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	if err := s.buildRules(reg); err != nil {
		return err
	}
	if err := s.openLogs(); err != nil {
		return err
	}
	s.lastSeen = &session.LastSeen{Store: s.store, Logger: s.log, TouchEvery: session.TouchIntervalFor(s.cfg.SessionIdleTTL)}
	// One session gate for the proxy, /auth/ and the check endpoints.
	gate := &session.Gate{Sessions: s.store, CookieName: s.cfg.CookieName, IdleTTL: s.cfg.SessionIdleTTL, LastSeen: s.lastSeen}
	if err := s.buildAuth(ctx, gate, reg); err != nil {
		return err
	}
	assertions, err := s.buildAssertions(ctx, gate)
	if err != nil {
		return err
	}
	if err := s.buildBearer(); err != nil {
		return err
	}
	if err := s.buildProxy(gate, assertions, reg); err != nil {
		return err
	}
	if s.tls, err = newTLS(ctx, s.cfg.TLS, s.cfg.BaseURL, s.log); err != nil {
		return err
	}
	if s.tls != nil {
		s.handler = hsts(s.handler)
	}
	s.admin = s.adminHandler(reg)
	startWarnings(s.log, s.cfg) // once the start can no longer fail on its own settings
	return nil
}

// registry is the Prometheus registry of /metrics with the process's own
// metrics: Go, process, build info, store writes and cache.
func (s *server) registry() (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	buildInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gatehouse_build_info", Help: "Always 1; the labels tell the version and the Go version of the running binary.",
	}, []string{"version", "goversion"})
	buildInfo.WithLabelValues(version, runtime.Version()).Set(1)
	reg.MustRegister(buildInfo)
	if err := s.writes.register(reg); err != nil {
		return nil, err
	}
	registerCacheMetrics(reg, s.store)
	return reg, nil
}

// buildRules makes what a reload of the configuration file replaces: the
// access policy (its emails file watched) and the route table, with the
// reloader of the file when there is one.
func (s *server) buildRules(reg prometheus.Registerer) error {
	pol, err := policy.New(s.cfg.Policy, s.log)
	if err != nil {
		return fmt.Errorf("access policy: %w", err)
	}
	s.policy = pol
	emailsOK := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gatehouse_emails_file_reload_success",
		Help: "0 while a change of --allow-emails-file that cannot be read or parsed leaves the last good list in force, else 1.",
	}, func() float64 {
		if _, ok := pol.EmailsFileStatus(); !ok {
			return 0
		}
		return 1
	})
	if err := reg.Register(emailsOK); err != nil {
		return err
	}
	table, err := route.NewTable(s.cfg.PublicPaths, s.cfg.Routes)
	if err != nil {
		return err
	}
	s.routes = &route.Live{}
	s.routes.Store(table)
	if s.cfg.ConfigFile == "" || s.cfg.source == nil || s.cfg.source.file == nil {
		return nil
	}
	s.reloader = newReloader(s.cfg, s.routes, pol, s.log, time.Now)
	return s.reloader.register(reg)
}

// openLogs opens the access log and the audit trail.
func (s *server) openLogs() error {
	logOut := s.cfg.LogOutput
	if logOut == nil {
		logOut = os.Stderr
	}
	if s.cfg.AccessLog {
		s.accessLog = proxy.NewAccessLog(logOut, s.cfg.LogFormat == "json")
	}
	var err error
	s.audit, s.closeAudit, err = openAuditLog(s.cfg.AuditLog, logOut, time.Now, func(err error) {
		s.log.Error("write audit event", "err", err)
	})
	return err
}

// denier answers requests refused by the gate or the policy, per --mode.
func (s *server) denier() web.Denier {
	return web.Denier{Mode: s.cfg.Mode, BaseURL: s.cfg.BaseURL, AppName: s.cfg.AppName}
}

// buildAuth makes the /auth/ handlers, the admin API of --admin-socket and
// the mailer.
func (s *server) buildAuth(ctx context.Context, gate *session.Gate, reg prometheus.Registerer) error {
	cfg := s.cfg
	hash := password.HashParams{Memory: cfg.Argon2Memory, Time: cfg.Argon2Time, Threads: 1}
	auth, err := authflows.NewContext(ctx, authflows.Config{
		BaseURL:              cfg.BaseURL,
		CookieName:           cfg.CookieName,
		CookieSecure:         cfg.CookieSecure,
		SessionTTL:           cfg.SessionTTL,
		SessionIdleTTL:       cfg.SessionIdleTTL,
		ResetTokenTTL:        cfg.ResetTokenTTL,
		InviteTTL:            cfg.InviteTTL,
		PasswordMinLength:    cfg.PasswordMinLength,
		CookieDomain:         cfg.CookieDomain,
		AllowedRedirectHosts: cfg.AllowedRedirectHosts,
		Hash:                 hash,
		Providers:            providerConfigs(cfg),
		Policy:               s.policy,
		OpenSignup:           cfg.OpenSignup,
		ProvidersOnly:        !cfg.PasswordSignIn,
		MailTemplates:        cfg.MailTemplates,
		TemplatesDir:         cfg.TemplatesDir,
		AppName:              cfg.AppName,
		WakeMailer:           func() { s.mailer.Wake() }, // s.mailer is built below, before any request
		Store:                s.store,
		Gate:                 gate,
		Denier:               s.denier(),
		ClientIP:             cfg.TrustedProxies.ClientIP,
		Logger:               s.log,
		Registerer:           reg,
		Audit:                s.audit,
		SharedLimits:         sharedLimits(s.store),
		SecondFactor:         cfg.SecondFactor.Policy,
		WebAuthnRPID:         cfg.SecondFactor.RPID,
		TokenKey:             cfg.Freshness.TokenKey,
		SessionRefresh:       cfg.Freshness.SessionRefresh,
		OIDCLogout:           cfg.Freshness.OIDCLogout,
	})
	if err != nil {
		return err
	}
	s.auth = auth
	freshnessWarnings(s.log, cfg) // once the providers are set up: a start they stop says only that
	s.adminAPI = admin.NewHandler(&admin.Service{
		Store: s.store,
		HashPassword: func(ctx context.Context, plain, email string) (string, error) {
			return password.NewHash(ctx, hash, plain, email, cfg.PasswordMinLength, password.AppNames(cfg.AppName, cfg.BaseURL)...)
		},
		Audit:      s.audit,
		Logger:     s.log,
		WakeMailer: func() { s.mailer.Wake() },
		RotateKey:  s.rotateKey, // s.keys is set by buildAssertions, before any request
	}, s.log)
	s.mailer, err = newMailer(cfg, s.store, auth.PrepareMail, s.log)
	return err
}

// buildAssertions makes the signing keys and the issuer of the identity
// assertion; nil with --identity-assertion=false.
func (s *server) buildAssertions(ctx context.Context, gate *session.Gate) (proxy.Assertions, error) {
	if !s.cfg.IdentityAssertion {
		return nil, nil
	}
	var err error
	if s.keys, err = assertion.NewKeys(ctx, s.store, nil, s.log); err != nil {
		return nil, err
	}
	s.issuer, err = assertion.New(assertion.Config{Keys: s.keys, Issuer: s.cfg.BaseURL.String(), Audience: s.cfg.AssertionAudience, TTL: s.cfg.AssertionTTL})
	if err != nil {
		return nil, err
	}
	gate.Gone = s.issuer.Drop // a revoked session's token goes with it
	return s.issuer, nil
}

// buildBearer makes the verifier of bearer credentials when a route may
// accept them: a rule with tokens: true, a configuration file whose reload
// may add one, or --bearer-jwt-issuer. It looks API tokens up through the
// store the proxy reads sessions from (on PostgreSQL, the replica's cache,
// which a revocation on any replica clears within a second).
func (s *server) buildBearer() error {
	needed := s.reloader != nil || len(s.cfg.Bearer.JWTIssuers) > 0
	for _, r := range s.routes.Rules().Rules() {
		needed = needed || r.Tokens
	}
	if !needed {
		return nil
	}
	v, err := bearer.New(bearer.Config{
		Tokens:      s.store,
		Issuers:     s.cfg.Bearer.JWTIssuers,
		Audience:    s.cfg.Bearer.JWTAudience,
		GroupsClaim: s.cfg.Bearer.GroupsClaim,
		Logger:      s.log,
	})
	if err != nil {
		return fmt.Errorf("bearer credentials: %w", err)
	}
	s.verifier = v
	return nil
}

// buildProxy makes the request path: the proxy with the auth flows behind
// it and the forward-auth check endpoints.
func (s *server) buildProxy(gate *session.Gate, assertions proxy.Assertions, reg prometheus.Registerer) error {
	cfg := s.cfg
	// The policy is checked on the request path only when it can be on:
	// off and without a configuration file to turn it on, no call at all.
	var gatePolicy proxy.AccessPolicy
	if s.policy.On() || s.reloader != nil {
		gatePolicy = s.policy
	}
	p, err := proxy.New(proxy.Config{
		Upstream:   cfg.Upstream,
		Auth:       withJWKS(s.auth, s.keys),
		Gate:       gate,
		Policy:     gatePolicy,
		Assertions: assertions,
		// Forward-auth: the check endpoints, for these peers only.
		ForwardAuthTrusted: cfg.ForwardAuthTrusted,
		BaseURL:            cfg.BaseURL,
		CookieName:         cfg.CookieName,
		OwnCookies:         ownCookies(cfg),
		Routes:             s.routes, // --public-path first, then the file's rules; reloaded
		Bearer:             bearerVerifier(s.verifier),
		Throttle:           s.bearerThrottle(),
		Denier:             s.denier(),
		TrustedProxies:     cfg.TrustedProxies,
		IdleTTL:            cfg.SessionIdleTTL,
		TLS:                cfg.TLS.Enabled(),
		UpstreamTimeout:    cfg.UpstreamTimeout,
		Logger:             s.log,
		AccessLog:          s.accessLog,
		Registerer:         reg,
	})
	if err != nil {
		return err
	}
	s.handler = p
	return nil
}

// bearerVerifier is v as the proxy takes it: no verifier, no interface
// value holding a nil pointer.
func bearerVerifier(v *bearer.Verifier) proxy.BearerVerifier {
	if v == nil {
		return nil
	}
	return v
}

// bearerThrottle counts the bad bearer credentials of each client, across
// replicas on PostgreSQL; nil without a verifier.
func (s *server) bearerThrottle() proxy.BearerThrottle {
	if s.verifier == nil {
		return nil
	}
	t := &bearer.Throttle{OnError: func(err error) {
		s.log.Warn("bearer throttle: shared count unavailable, counting on this replica", "err", err)
	}}
	if shared, ok := s.store.(*listenedStore); ok {
		t.Shared = shared.pg
	}
	return t
}

// reload reads the configuration file again and applies it, as SIGHUP
// does; without --config it does nothing.
func (s *server) reload() {
	if s.reloader != nil {
		s.reloader.Kick()
	}
}

// rotateKey is `gatehouse keys rotate` through the admin socket: the new
// key signs on this server from the next request, and on every other
// server sharing the store within assertion.RefreshInterval.
func (s *server) rotateKey(ctx context.Context) (admin.KeyRotation, error) {
	if s.keys == nil { // --identity-assertion=false: the keys are kept for when it is on again
		return rotateKeyIn(ctx, s.store)
	}
	kid, err := s.keys.Rotate(ctx)
	if err != nil {
		return admin.KeyRotation{}, err
	}
	if err := s.keys.Refresh(ctx); err != nil {
		return admin.KeyRotation{}, fmt.Errorf("signing key %s stored, but loading it failed (retried within %s): %w", kid, assertion.RefreshInterval, err)
	}
	return admin.KeyRotation{KeyID: kid, RetiredKept: assertion.RetiredKept}, nil
}

// jwksPath is where the proxy listener publishes the assertion keys.
const jwksPath = "/auth/.well-known/jwks.json"

// withJWKS serves the key set at jwksPath in front of the auth flows.
func withJWKS(auth http.Handler, keys *assertion.Keys) http.Handler {
	if keys == nil {
		return auth
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == jwksPath {
			keys.ServeHTTP(w, r)
			return
		}
		auth.ServeHTTP(w, r)
	})
}

// providerConfigs are the providers the flags enabled.
func providerConfigs(cfg Config) []provider.Config {
	var out []provider.Config
	for i, k := range provider.Kinds() {
		if i < len(cfg.Providers) && k.Enabled(&cfg.Providers[i]) {
			out = append(out, cfg.Providers[i])
		}
	}
	return out
}

// adminHandler serves /healthz (the process is up), /readyz (the store
// answers and the server is not draining; its body names failing writes)
// and /metrics.
func (s *server) adminHandler(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "not ready\n", http.StatusServiceUnavailable)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.store.Ping(ctx); err != nil {
			http.Error(w, "store unavailable\n", http.StatusServiceUnavailable)
			return
		}
		// Failing writes and a configuration or emails file that could not
		// be reloaded do not flip readiness (see writeHealth; the last good
		// rules stay in force); they are said here, for the operator.
		body := "ready"
		for _, note := range s.readyNotes() {
			body += "; " + note
		}
		_, _ = w.Write([]byte(body + "\n"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	if s.keys != nil {
		mux.Handle("GET /jwks.json", s.keys)
	}
	return mux
}

// readyNotes are what /readyz says besides "ready": failing writes, and a
// configuration or emails file whose last change is not in force.
func (s *server) readyNotes() []string {
	var notes []string
	for _, note := range []string{s.writes.status(), s.reloader.status()} {
		if note != "" {
			notes = append(notes, note)
		}
	}
	if file, ok := s.policy.EmailsFileStatus(); !ok {
		notes = append(notes, fmt.Sprintf("emails file %s not reloaded (see the log); the last good list is in force", file))
	}
	return notes
}

// listeners are the open ports of a server.
type listeners struct {
	main, admin, http net.Listener
	socket            net.Listener // --admin-socket
}

// listen opens every configured port before anything is served, so a taken
// port fails the start as a whole.
func (s *server) listen() (*listeners, error) {
	var ls listeners
	var err error
	fail := func(e error) (*listeners, error) { ls.close(); return nil, e }
	if ls.main, err = net.Listen("tcp", s.cfg.Listen); err != nil {
		return fail(fmt.Errorf("--listen: %w", err))
	}
	if s.cfg.AdminListen != "" {
		if ls.admin, err = net.Listen("tcp", s.cfg.AdminListen); err != nil {
			return fail(fmt.Errorf("--admin-listen: %w", err))
		}
	}
	if s.tls != nil && s.cfg.TLS.HTTPListen != "" {
		if ls.http, err = net.Listen("tcp", s.cfg.TLS.HTTPListen); err != nil {
			return fail(httpListenError(s.cfg.TLS, err))
		}
	}
	if s.cfg.AdminSocket != "" {
		if ls.socket, err = listenAdminSocket(s.cfg.AdminSocket); err != nil {
			return fail(err)
		}
		if pl, ok := ls.socket.(*peerListener); ok {
			pl.onRefuse = func(uid uint32) {
				s.log.Warn("admin socket: refused a connection of another user", "uid", uid)
			}
		}
	}
	return &ls, nil
}

func (ls *listeners) close() {
	for _, l := range []net.Listener{ls.main, ls.admin, ls.http, ls.socket} {
		if l != nil {
			l.Close()
		}
	}
}

// serve runs until ctx ends, then drains in-flight requests for at most
// --shutdown-timeout, stops the background loops and closes the store. A
// drain cut short by the deadline is an error (exit 1).
func (s *server) serve(ctx context.Context, ls *listeners) error {
	defer s.close()
	if s.tls != nil && s.tls.Start != nil {
		if err := s.tls.Start(); err != nil {
			ls.close()
			return err
		}
	}
	bg, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	var loops sync.WaitGroup
	loopFuncs := []func(context.Context) error{s.lastSeen.Run, s.mailer.Run, s.sweep, s.policy.Run,
		func(ctx context.Context) error { s.auth.RefreshSessions(ctx); return nil }} // provider sessions checked again
	if s.reloader != nil {
		loopFuncs = append(loopFuncs, s.reloader.Run) // the configuration file
	}
	if s.keys != nil {
		loopFuncs = append(loopFuncs, s.keys.Run) // rotation on schedule
	}
	if s.verifier != nil {
		// Last use of API tokens, written in batches (a final write at the
		// stop), and the JWT issuers' key sets kept fresh.
		loopFuncs = append(loopFuncs, s.verifier.Run)
	}
	if s.accessLog != nil {
		loopFuncs = append(loopFuncs, s.accessLog.Run)
	}
	for _, loop := range loopFuncs {
		loops.Go(func() {
			// LastSeen.Run returns its final flush's error: last-seen times lost at shutdown.
			if err := loop(bg); err != nil {
				s.log.Error("background loop failed", "err", err)
			}
		})
	}

	errorLog := slog.NewLogLogger(s.log.Handler(), slog.LevelWarn) // every listener logs through slog
	main := proxy.NewServer(s.cfg.Listen, s.handler)
	main.ErrorLog = errorLog
	servers := []*http.Server{main}
	errc := make(chan error, 4)
	// serving counts the Serve goroutines: serve returns only after each
	// has returned, and so closed its listener. One that had not reached
	// Serve when Shutdown ran would otherwise leave its port accepting
	// connections nobody answers (and the socket file in place) after the
	// stop; Serve after Shutdown closes the listener and returns at once.
	var serving sync.WaitGroup
	serveOn := func(srv *http.Server, ln net.Listener, tlsOn bool) {
		var err error
		if tlsOn {
			srv.TLSConfig = s.tls.Config
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}
	serving.Go(func() { serveOn(main, ls.main, s.tls != nil) })
	if ls.admin != nil {
		admin := proxy.NewServer(s.cfg.AdminListen, s.admin)
		admin.ErrorLog = errorLog
		servers = append(servers, admin)
		serving.Go(func() { serveOn(admin, ls.admin, false) })
	}
	if ls.http != nil {
		plain := proxy.NewServer(s.cfg.TLS.HTTPListen, s.tls.HTTPHandler)
		plain.ErrorLog = errorLog
		servers = append(servers, plain)
		serving.Go(func() { serveOn(plain, ls.http, false) })
	}
	if ls.socket != nil {
		// Removed on a clean exit: Shutdown closes the listener, which unlinks the file.
		sock := &http.Server{Handler: s.adminAPI, ReadHeaderTimeout: 10 * time.Second, ErrorLog: errorLog}
		servers = append(servers, sock)
		serving.Go(func() { serveOn(sock, ls.socket, false) })
	}
	s.ready.Store(true)
	s.log.Info("gatehouse started", "listen", ls.main.Addr().String(), "upstream", s.cfg.Upstream.Redacted(),
		"base_url", s.cfg.BaseURL.String(), "mode", string(s.cfg.Mode), "admin", s.cfg.AdminListen, "admin_socket", s.cfg.AdminSocket, "version", version)

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	s.ready.Store(false)
	s.log.Info("gatehouse stopping: draining in-flight requests", "deadline", s.cfg.ShutdownTimeout.String())
	drain, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	cutShort := false
	for _, srv := range servers {
		if err := srv.Shutdown(drain); err != nil {
			s.log.Warn("shutdown deadline passed; closing open connections", "err", err)
			srv.Close()
			cutShort = true
		}
	}
	serving.Wait()
	ls.close() // a ServeTLS that failed before Serve left its listener open
	stopBackground()
	loops.Wait()
	s.log.Info("gatehouse stopped")
	if serveErr == nil && cutShort {
		// Requests were cut off: the exit code says so (non-zero), so that
		// a supervisor or deploy script does not take it for a clean stop.
		serveErr = fmt.Errorf("shutdown: in-flight requests cut off after --shutdown-timeout %s", s.cfg.ShutdownTimeout)
	}
	return serveErr
}

// close stops TLS certificate management and closes the store. Last-seen
// times are flushed before, by LastSeen.Run when serve stops the loops.
func (s *server) close() {
	if s.tls != nil {
		s.tls.Close()
	}
	if err := s.store.Close(); err != nil {
		s.log.Error("close database", "err", err)
	}
	if err := s.closeAudit(); err != nil {
		s.log.Error("close audit log", "err", err)
	}
}

// Sweep interval bounds: expired records are deleted every quarter of the
// shortest lifetime a record has, within these bounds, so a record outlives
// its TTL by at most a quarter of it (or maxSweepInterval).
const (
	minSweepInterval = time.Second
	maxSweepInterval = 10 * time.Minute
)

// sweepInterval is how often expired records are deleted for cfg: a quarter
// of the shortest of the session TTL, the idle TTL, the reset token TTL and
// the OAuth flow lifetime, between minSweepInterval and maxSweepInterval.
func sweepInterval(cfg Config) time.Duration {
	shortest := min(cfg.SessionTTL, cfg.ResetTokenTTL, authflows.OAuthFlowTTL)
	if cfg.SessionIdleTTL > 0 {
		shortest = min(shortest, cfg.SessionIdleTTL)
	}
	return min(max(shortest/4, minSweepInterval), maxSweepInterval)
}

// sweepOnce deletes what has expired now and logs it.
func (s *server) sweepOnce(ctx context.Context) error {
	now := time.Now()
	sessions, err1 := s.store.DeleteExpiredSessions(ctx, now, s.cfg.SessionIdleTTL)
	tokens, err2 := s.store.DeleteExpiredResetTokens(ctx, now)
	flows, err3 := s.store.DeleteExpiredOAuthFlows(ctx, now)
	invites, err4 := s.store.DeleteExpiredInviteTokens(ctx, now)
	var buckets int
	var err5 error
	if rates, ok := s.store.(interface {
		DeleteFullRateBuckets(ctx context.Context, now time.Time) (int, error)
	}); ok {
		buckets, err5 = rates.DeleteFullRateBuckets(ctx, now)
	}
	// Second-factor steps, WebAuthn ceremonies (begun without a session)
	// and unconfirmed authenticator apps.
	factors, err6 := s.store.DeleteExpiredFactorRecords(ctx, now)
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil && ctx.Err() == nil {
		s.log.Error("sweep expired records", "err", err)
	} else if sessions+tokens+flows+invites+buckets+factors > 0 {
		s.log.Info("swept expired records", "sessions", sessions, "reset_tokens", tokens, "oauth_flows", flows, "invite_tokens", invites, "rate_buckets", buckets,
			"factor_records", factors)
	}
	return nil
}

// sweep deletes expired sessions, reset tokens, OAuth flows and
// second-factor records (DS1) until
// ctx ends, logging what it removed.
func (s *server) sweep(ctx context.Context) error {
	t := time.NewTicker(sweepInterval(s.cfg))
	defer t.Stop()
	for {
		if s.issuer != nil {
			s.issuer.Sweep() // this replica's tokens of sessions unused for a lifetime
		}
		if shared, ok := s.store.(exclusiveRunner); ok {
			// Several replicas: the one that holds the lock sweeps.
			if _, err := shared.Exclusive(ctx, "sweep", s.sweepOnce); err != nil && ctx.Err() == nil {
				s.log.Error("sweep expired records", "err", err)
			}
		} else {
			_ = s.sweepOnce(ctx)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// ownCookies are Gatehouse's cookies besides the session cookie that a
// browser sends on every path, for the proxy to strip: the __Host- OAuth
// transaction cookie and second-factor step cookie (with Secure cookies;
// otherwise they are scoped to /auth/ paths and never reach the app).
func ownCookies(cfg Config) []string {
	if !cfg.CookieSecure {
		return nil
	}
	return []string{authflows.TransactionCookieName(true), authflows.StepCookieName(true), authflows.CeremonyCookieName(true)}
}

// startWarnings logs the configurations that start but cannot work as
// meant, each with what to do (at a start and in `gatehouse config check`).
func startWarnings(log *slog.Logger, cfg Config) {
	warnNewcomerTraps(log, cfg)
	warnPasskeysOff(log, cfg)
	if len(cfg.ForwardAuthTrusted) > 0 && len(cfg.TrustedProxies) == 0 {
		// Behind a front proxy every /auth/ request comes from its address:
		// the per-client limits would be one bucket for every client.
		log.Warn("--forward-auth-trusted without --trusted-proxies: requests through the front proxy all count as its address for the per-client limits (sign-in, forgot); give --trusted-proxies the proxy's address and have it send X-Forwarded-For")
	}
}

// warnNewcomerTraps logs the configurations that start but cannot work
// for browsers, each with what to do.
func warnNewcomerTraps(log *slog.Logger, cfg Config) {
	baseHost := cfg.BaseURL.Hostname()
	listenHost, _, _ := net.SplitHostPort(cfg.Listen)
	if provider.IsLoopbackHost(baseHost) && !(listenHost != "" && provider.IsLoopbackHost(listenHost)) {
		// A browser on another machine opens http://SERVER:PORT/ and is sent
		// to its own localhost for the sign-in.
		log.Warn("--base-url names localhost while --listen accepts other hosts: browsers elsewhere would be sent to their own machine to sign in; set --base-url to the address users open",
			"base_url", cfg.BaseURL.String(), "listen", cfg.Listen)
	}
	if cfg.CookieSecure && cfg.BaseURL.Scheme == "http" && !provider.IsLoopbackHost(baseHost) {
		log.Warn("--cookie-secure with an http:// --base-url: browsers keep no Secure cookie set over plain http (localhost aside), so sign-in would loop; use https:// or leave --cookie-secure unset",
			"base_url", cfg.BaseURL.String())
	}
	if providers := providerConfigs(cfg); len(providers) > 0 && !cfg.OpenSignup && !cfg.Policy.On() {
		// Sign-up is closed (AP3): the button works only for accounts
		// that linked the provider on their account page.
		var names []string
		for _, p := range providers {
			names = append(names, p.Name)
		}
		log.Warn("provider sign-in is on, but sign-up is closed and no access policy is set: only existing accounts that linked the provider on their account page can sign in with it, and everyone else is told there is no account; to let people in through the provider set an access policy (--allow-email-domain, --allow-emails-file, --allow-group, --github-org, --google-hosted-domain) or, for a public app, --open-signup",
			"providers", strings.Join(names, ","))
	}
}
