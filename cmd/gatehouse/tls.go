package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/mholt/acmez/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// tlsServing is how Gatehouse terminates TLS.
type tlsServing struct {
	Config      *tls.Config  // for the main listener: TLS 1.2 minimum, certificates from ACME or static files
	HTTPHandler http.Handler // for --http-listen: ACME HTTP-01 challenges, everything else redirected to HTTPS
	Close       func()       // stops renewals and file watching; safe to call twice
	// Start, when not nil, creates --tls-storage and begins obtaining
	// certificates. It is called once the listeners are bound, so that a
	// start that fails leaves no folder behind and no ACME order is placed.
	Start func() error
}

const (
	// certReloadInterval is how often --tls-cert and --tls-key are checked for changes.
	certReloadInterval = 10 * time.Second
	// hstsValue asks browsers to use HTTPS only, for a year (TL3).
	hstsValue = "max-age=31536000"
)

// newTLS returns nil, nil when c.Enabled() is false. baseURL is where the
// HTTP listener redirects to (its host; the request's path and query).
//
// With ACME, newTLS returns at once and certificates are loaded or obtained
// in the background as soon as c.HTTPListen accepts connections, so that
// challenges reach the caller's listeners; until then handshakes for the
// domains fail. Static files must be valid at start.
func newTLS(ctx context.Context, c TLSConfig, baseURL *url.URL, logger *slog.Logger) (*tlsServing, error) {
	switch {
	case len(c.Domains) > 0:
		return newACMETLS(ctx, c, redirectHTTPS(baseURL), logger)
	case c.CertFile != "":
		return newStaticTLS(ctx, c, redirectHTTPS(baseURL), logger, certReloadInterval)
	}
	return nil, nil
}

// hsts wraps h to send Strict-Transport-Security on every response (used on HTTPS listeners).
func hsts(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Strict-Transport-Security", hstsValue)
		h.ServeHTTP(w, r)
	})
}

// redirectHTTPS sends every request to the same path and query on the base
// URL's host over HTTPS. 308 keeps the method; the Host header is never used.
func redirectHTTPS(base *url.URL) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := url.URL{Scheme: "https", Host: base.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
		http.Redirect(w, r, target.String(), http.StatusPermanentRedirect)
	})
}

// newACMETLS manages certificates for exactly c.Domains with certmagic, on a
// Config and Cache of its own.
func newACMETLS(ctx context.Context, c TLSConfig, redirect http.Handler, logger *slog.Logger) (*tlsServing, error) {
	roots, err := acmeRoots(c.CARoot)
	if err != nil {
		return nil, err
	}
	if err := checkCreatableDir(c.Storage); err != nil {
		return nil, flagError("tls-storage", "%v", err)
	}
	// certmagic's own challenge solvers bind a port to answer on unless
	// something already listens there. Point both at --http-listen, which
	// is ours: HTTP-01 is answered by HTTPHandler and TLS-ALPN-01 by the main
	// listener through Config, and certmagic binds nothing itself.
	zapLogger := zap.New(zapToSlog{logger: logger.With("component", "certmagic")})
	issuer := certmagic.ACMEIssuer{
		CA:                   c.CA,
		Email:                c.Email,
		Agreed:               true,
		TrustedRoots:         roots,
		Logger:               zapLogger,
		DisableHTTPChallenge: c.HTTPListen == "",
	}
	solverAddr := ""
	if c.HTTPListen != "" {
		host, portName, _ := net.SplitHostPort(c.HTTPListen) // checked by the flags
		port, err := net.LookupPort("tcp", portName)
		if err != nil {
			return nil, flagError("http-listen", "%v", err)
		}
		issuer.ListenHost, issuer.AltHTTPPort, issuer.AltTLSALPNPort = host, port, port
		solverAddr = net.JoinHostPort(host, portName)
	}

	var magic *certmagic.Config
	cache := certmagic.NewCache(certmagic.CacheOptions{
		GetConfigForCert: func(certmagic.Certificate) (*certmagic.Config, error) { return magic, nil },
		Logger:           zapLogger,
	})
	magic = certmagic.New(cache, certmagic.Config{
		Storage: &certmagic.FileStorage{Path: c.Storage},
		Logger:  zapLogger,
		OnEvent: certEvents(logger),
	})
	acmeIssuer := certmagic.NewACMEIssuer(magic, issuer)
	magic.Issuers = []certmagic.Issuer{acmeIssuer}

	ctx, cancel := context.WithCancel(ctx)
	start := func() error {
		if err := os.MkdirAll(c.Storage, 0o700); err != nil {
			return flagError("tls-storage", "%v", err)
		}
		go func() {
			if solverAddr != "" && !waitListening(ctx, solverAddr) {
				return
			}
			logger.Info("managing certificates", "domains", c.Domains, "ca", c.CA)
			if err := magic.ManageAsync(ctx, c.Domains); err != nil {
				logger.Error("managing certificates", "domains", c.Domains, "err", err)
			}
		}()
		return nil
	}

	config := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{acmez.ACMETLS1Protocol}, // http.Server.ServeTLS adds h2 and http/1.1
		GetCertificate: onlyNames(c.Domains, magic.GetCertificate),
	}
	return &tlsServing{
		Config:      config,
		HTTPHandler: acmeIssuer.HTTPChallengeHandler(redirect),
		Close:       sync.OnceFunc(func() { cancel(); cache.Stop() }),
		Start:       sync.OnceValue(start),
	}, nil
}

// acmeRoots is the system pool plus the --acme-ca-root PEM, or nil (the
// system pool) when that flag is empty.
func acmeRoots(path string) (*x509.CertPool, error) {
	if path == "" {
		return nil, nil
	}
	pemBytes, err := os.ReadFile(path)
	if err != nil {
		return nil, flagError("acme-ca-root", "%v", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pemBytes) {
		return nil, flagError("acme-ca-root", "%s holds no PEM certificate", path)
	}
	return pool, nil
}

// waitListening polls addr until it accepts TCP connections, so that
// certmagic finds the caller's listener there; false when ctx ends first.
func waitListening(ctx context.Context, addr string) bool {
	for {
		conn, err := net.DialTimeout("tcp", addr, 250*time.Millisecond)
		if err == nil {
			conn.Close()
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// certEvents logs certmagic's progress, since an ACME order can take a while.
func certEvents(logger *slog.Logger) func(context.Context, string, map[string]any) error {
	return func(_ context.Context, event string, data map[string]any) error {
		switch event {
		case "cert_obtaining":
			logger.Info("obtaining certificate", "domain", data["identifier"], "renewal", data["renewal"] == true)
		case "cert_obtained":
			logger.Info("certificate obtained", "domain", data["identifier"], "renewal", data["renewal"] == true)
		case "cert_failed":
			logger.Error("obtaining certificate failed; will retry", "domain", data["identifier"], "err", data["error"])
		}
		return nil
	}
}

// onlyNames refuses handshakes whose server name is not one of names, so
// nothing is served, let alone issued, for any other name (TL2).
func onlyNames(names []string, next func(*tls.ClientHelloInfo) (*tls.Certificate, error)) func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	allowed := make(map[string]bool, len(names))
	for _, name := range names {
		allowed[normalizeServerName(name)] = true
	}
	return func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		if !allowed[normalizeServerName(hello.ServerName)] {
			return nil, fmt.Errorf("no certificate for server name %q", hello.ServerName)
		}
		return next(hello)
	}
}

// normalizeServerName compares names case-insensitively, ignoring a final dot.
func normalizeServerName(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, "."))
}

// newStaticTLS serves the --tls-cert/--tls-key pair and checks the files
// for changes every interval.
func newStaticTLS(ctx context.Context, c TLSConfig, redirect http.Handler, logger *slog.Logger, interval time.Duration) (*tlsServing, error) {
	files := &certFiles{certPath: c.CertFile, keyPath: c.KeyFile, logger: logger}
	if err := files.load(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				files.reloadIfChanged()
			}
		}
	}()
	return &tlsServing{
		Config:      &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: files.certificate},
		HTTPHandler: redirect,
		Close:       sync.OnceFunc(func() { cancel(); <-done }),
	}, nil
}

// certFiles is a certificate loaded from PEM files, replaced when they change.
type certFiles struct {
	certPath, keyPath string
	logger            *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   [2]os.FileInfo // of the files at the last load attempt
	lastErr string         // of the last failed attempt, to log each failure once
}

// certificate returns the current certificate for any handshake.
func (f *certFiles) certificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cert, nil
}

// load reads both files; the error names the flag at fault.
func (f *certFiles) load() error {
	var stamp [2]os.FileInfo
	var contents [2][]byte
	for i, file := range []struct{ flag, path string }{{"tls-cert", f.certPath}, {"tls-key", f.keyPath}} {
		info, err := os.Stat(file.path)
		if err == nil {
			contents[i], err = os.ReadFile(file.path)
		}
		if err != nil {
			return flagError(file.flag, "%v", err)
		}
		stamp[i] = info
	}
	f.mu.Lock()
	f.stamp = stamp
	f.mu.Unlock()
	cert, err := tls.X509KeyPair(contents[0], contents[1])
	if err != nil {
		return flagError("tls-cert", "%s with --tls-key %s: %v", f.certPath, f.keyPath, err)
	}
	f.mu.Lock()
	f.cert, f.lastErr = &cert, ""
	f.mu.Unlock()
	f.logger.Info("loaded certificate", "file", f.certPath, "names", cert.Leaf.DNSNames, "not_after", cert.Leaf.NotAfter)
	return nil
}

// reloadIfChanged loads the files again when either differs from the last
// attempt (another file, modification time or size). A failed load keeps
// the current certificate.
func (f *certFiles) reloadIfChanged() {
	f.mu.Lock()
	old := f.stamp
	f.mu.Unlock()
	changed := false
	for i, path := range []string{f.certPath, f.keyPath} {
		info, err := os.Stat(path)
		if err != nil {
			f.logFailure(err)
			return
		}
		changed = changed || !os.SameFile(info, old[i]) || !info.ModTime().Equal(old[i].ModTime()) || info.Size() != old[i].Size()
	}
	if !changed {
		return
	}
	if err := f.load(); err != nil {
		f.logFailure(err)
	}
}

// logFailure logs a failed reload, once per distinct error.
func (f *certFiles) logFailure(err error) {
	f.mu.Lock()
	repeated := f.lastErr == err.Error()
	f.lastErr = err.Error()
	f.mu.Unlock()
	if !repeated {
		f.logger.Error("reloading certificate failed; keeping the current one", "err", err)
	}
}

// zapToSlog is a zapcore.Core that hands certmagic's zap entries to slog.
// Its info lines (every ACME step) become debug lines; certEvents reports
// progress instead.
type zapToSlog struct {
	logger *slog.Logger
	attrs  []slog.Attr
}

// level maps zap levels to slog: info and below become debug.
func (z zapToSlog) level(l zapcore.Level) slog.Level {
	switch {
	case l >= zapcore.ErrorLevel:
		return slog.LevelError
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

// Enabled asks the slog handler, at the mapped level.
func (z zapToSlog) Enabled(l zapcore.Level) bool {
	return z.logger.Enabled(context.Background(), z.level(l))
}

// With returns a core that adds fields to every entry.
func (z zapToSlog) With(fields []zapcore.Field) zapcore.Core {
	return zapToSlog{logger: z.logger, attrs: append(slices.Clip(z.attrs), fieldAttrs(fields)...)}
}

// Check adds this core to an entry that slog would log.
func (z zapToSlog) Check(entry zapcore.Entry, checked *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if z.Enabled(entry.Level) {
		return checked.AddCore(entry, z)
	}
	return checked
}

// Write logs one entry through slog.
func (z zapToSlog) Write(entry zapcore.Entry, fields []zapcore.Field) error {
	attrs := append(slices.Clip(z.attrs), fieldAttrs(fields)...)
	if entry.LoggerName != "" {
		attrs = append(attrs, slog.String("logger", entry.LoggerName))
	}
	z.logger.LogAttrs(context.Background(), z.level(entry.Level), entry.Message, attrs...)
	return nil
}

// Sync has nothing to flush.
func (zapToSlog) Sync() error { return nil }

// fieldAttrs turns zap fields into slog attributes, sorted by key.
func fieldAttrs(fields []zapcore.Field) []slog.Attr {
	enc := zapcore.NewMapObjectEncoder()
	for _, field := range fields {
		field.AddTo(enc)
	}
	attrs := make([]slog.Attr, 0, len(enc.Fields))
	for _, key := range slices.Sorted(maps.Keys(enc.Fields)) {
		attrs = append(attrs, slog.Any(key, enc.Fields[key]))
	}
	return attrs
}
