package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gatehouse-auth/gatehouse/authflows"
	"github.com/gatehouse-auth/gatehouse/proxy"
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
	lastSeen *proxy.LastSeen
	mailer   mailer
	tls      *tlsServing
	ready    atomic.Bool
}

// newServer opens the store and builds every part; it opens no port.
func newServer(ctx context.Context, cfg Config, logger *slog.Logger) (*server, error) {
	store, err := openServerStore(cfg.DB, logger)
	if err != nil {
		return nil, err
	}
	s := &server{cfg: cfg, log: logger, store: store}
	if err := s.build(ctx); err != nil {
		store.Close()
		return nil, err
	}
	return s, nil
}

func (s *server) build(ctx context.Context) error {
	cfg := s.cfg
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerCacheMetrics(reg, s.store)
	denier := web.Denier{Mode: cfg.Mode, BaseURL: cfg.BaseURL}

	auth, err := authflows.New(authflows.Config{
		BaseURL:           cfg.BaseURL,
		CookieName:        cfg.CookieName,
		CookieSecure:      cfg.CookieSecure,
		SessionTTL:        cfg.SessionTTL,
		SessionIdleTTL:    cfg.SessionIdleTTL,
		ResetTokenTTL:     cfg.ResetTokenTTL,
		PasswordMinLength: cfg.PasswordMinLength,
		HSTS:              cfg.TLS.Enabled(),
		Hash:              authflows.HashParams{Memory: cfg.Argon2Memory, Time: cfg.Argon2Time, Threads: 1},
		Providers:         providerConfigs(cfg),
		MailTemplates:     cfg.MailTemplates,
		WakeMailer:        func() { s.mailer.Wake() }, // s.mailer is built below, before any request
		Store:             s.store,
		Denier:            denier,
		ClientIP:          cfg.TrustedProxies.ClientIP,
		Logger:            s.log,
		Registerer:        reg,
		SharedLimits:      sharedLimits(s.store),
	})
	if err != nil {
		return err
	}
	s.auth = auth
	if s.mailer, err = newMailer(cfg, s.store, auth.PrepareMail, s.log); err != nil {
		return err
	}
	s.lastSeen = &proxy.LastSeen{Store: s.store, Logger: s.log}
	p, err := proxy.New(proxy.Config{
		Upstream:        cfg.Upstream,
		Auth:            auth,
		Sessions:        s.store,
		LastSeen:        s.lastSeen,
		CookieName:      cfg.CookieName,
		PublicPaths:     cfg.PublicPaths,
		Denier:          denier,
		TrustedProxies:  cfg.TrustedProxies,
		IdleTTL:         cfg.SessionIdleTTL,
		TLS:             cfg.TLS.Enabled(),
		UpstreamTimeout: cfg.UpstreamTimeout,
		Logger:          s.log,
		Registerer:      reg,
	})
	if err != nil {
		return err
	}
	s.handler = p
	if s.tls, err = newTLS(ctx, cfg.TLS, cfg.BaseURL, s.log); err != nil {
		return err
	}
	if s.tls != nil {
		s.handler = hsts(p)
	}
	s.admin = s.adminHandler(reg)
	return nil
}

func providerConfigs(cfg Config) []authflows.ProviderConfig {
	var out []authflows.ProviderConfig
	for _, p := range []struct {
		name string
		c    OAuthConfig
	}{{"google", cfg.Google}, {"github", cfg.GitHub}} {
		if p.c.ClientID == "" {
			continue
		}
		out = append(out, authflows.ProviderConfig{
			Name: p.name, ClientID: p.c.ClientID, ClientSecret: p.c.ClientSecret, RedirectURL: p.c.RedirectURL,
			AuthURL: p.c.AuthURL, TokenURL: p.c.TokenURL, UserinfoURL: p.c.UserinfoURL, APIURL: p.c.APIURL,
		})
	}
	return out
}

// adminHandler serves /healthz (the process is up), /readyz (the store
// answers and the server is not draining) and /metrics.
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
		_, _ = w.Write([]byte("ready\n"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	return mux
}

// listeners are the open ports of a server.
type listeners struct {
	main, admin, http net.Listener
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
			return fail(fmt.Errorf("--http-listen: %w", err))
		}
	}
	return &ls, nil
}

func (ls *listeners) close() {
	for _, l := range []net.Listener{ls.main, ls.admin, ls.http} {
		if l != nil {
			l.Close()
		}
	}
}

func (s *server) listenAndServe(ctx context.Context) error {
	ls, err := s.listen()
	if err != nil {
		s.close()
		return err
	}
	return s.serve(ctx, ls)
}

// serve runs until ctx ends, then drains in-flight requests for at most
// --shutdown-timeout, stops the background loops and closes the store.
func (s *server) serve(ctx context.Context, ls *listeners) error {
	defer s.close()
	bg, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	var loops sync.WaitGroup
	for _, loop := range []func(context.Context) error{s.lastSeen.Run, s.mailer.Run, s.sweep} {
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
	errc := make(chan error, 3)
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
	go serveOn(main, ls.main, s.tls != nil)
	if ls.admin != nil {
		admin := proxy.NewServer(s.cfg.AdminListen, s.admin)
		admin.ErrorLog = errorLog
		servers = append(servers, admin)
		go serveOn(admin, ls.admin, false)
	}
	if ls.http != nil {
		plain := proxy.NewServer(s.cfg.TLS.HTTPListen, s.tls.HTTPHandler)
		plain.ErrorLog = errorLog
		servers = append(servers, plain)
		go serveOn(plain, ls.http, false)
	}
	s.ready.Store(true)
	s.log.Info("gatehouse started", "listen", ls.main.Addr().String(), "upstream", s.cfg.Upstream.Redacted(),
		"base_url", s.cfg.BaseURL.String(), "mode", string(s.cfg.Mode), "admin", s.cfg.AdminListen, "version", version)

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	s.ready.Store(false)
	s.log.Info("gatehouse stopping: draining in-flight requests", "deadline", s.cfg.ShutdownTimeout.String())
	drain, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	for _, srv := range servers {
		if err := srv.Shutdown(drain); err != nil {
			s.log.Warn("shutdown deadline passed; closing open connections", "err", err)
			srv.Close()
		}
	}
	s.auth.Drain() // forgot requests still minting tokens and queueing mail
	stopBackground()
	loops.Wait()
	s.log.Info("gatehouse stopped")
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
}

// sweepOnce deletes what has expired now and logs it.
func (s *server) sweepOnce(ctx context.Context) error {
	now := time.Now()
	sessions, err1 := s.store.DeleteExpiredSessions(ctx, now, s.cfg.SessionIdleTTL)
	tokens, err2 := s.store.DeleteExpiredResetTokens(ctx, now)
	flows, err3 := s.store.DeleteExpiredOAuthFlows(ctx, now)
	var buckets int
	var err4 error
	if rates, ok := s.store.(interface {
		DeleteFullRateBuckets(ctx context.Context, now time.Time) (int, error)
	}); ok {
		buckets, err4 = rates.DeleteFullRateBuckets(ctx, now)
	}
	if err := errors.Join(err1, err2, err3, err4); err != nil && ctx.Err() == nil {
		s.log.Error("sweep expired records", "err", err)
	} else if sessions+tokens+flows+buckets > 0 {
		s.log.Info("swept expired records", "sessions", sessions, "reset_tokens", tokens, "oauth_flows", flows, "rate_buckets", buckets)
	}
	return nil
}

// sweepInterval is how often expired records are deleted.
const sweepInterval = 10 * time.Minute

// sweep deletes expired sessions, reset tokens and OAuth flows (DS1) until
// ctx ends, logging what it removed.
func (s *server) sweep(ctx context.Context) error {
	t := time.NewTicker(sweepInterval)
	defer t.Stop()
	for {
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
