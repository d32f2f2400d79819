package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitLimit bounds every poll; generous, since no timing decides a test.
const waitLimit = 90 * time.Second

// TestTLSDisabledReturnsNil: without --tls-domain or --tls-cert there is nothing to serve.
func TestTLSDisabledReturnsNil(t *testing.T) {
	ts, err := newTLS(t.Context(), TLSConfig{}, nil, slog.New(slog.DiscardHandler))
	if ts != nil || err != nil {
		t.Fatalf("newTLS without --tls-domain or --tls-cert = %v, %v; want nil, nil", ts, err)
	}
}

// TestTLSStaticCertificate serves --tls-cert/--tls-key with HSTS, TLS 1.2+
// and the HTTP redirect.
func TestTLSStaticCertificate(t *testing.T) {
	authority := newTestCA(t)
	dir := t.TempDir()
	c := TLSConfig{CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem")}
	serial := authority.writePair(t, c.CertFile, c.KeyFile, "static.gatehouse.test")
	base := mustURL(t, "https://static.gatehouse.test")
	logger, _ := testLogger(t)
	site := serveSite(t, c, base, logger, listenLocal(t), listenLocal(t))

	resp, err := httpsClient(site.httpsAddr, "static.gatehouse.test", authority.pool).Get("https://static.gatehouse.test/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.TLS.PeerCertificates[0].SerialNumber; got.Cmp(serial) != 0 {
		t.Errorf("served serial %v, want %v", got, serial)
	}
	if got := resp.Header.Get("Strict-Transport-Security"); got != hstsValue {
		t.Errorf("Strict-Transport-Security = %q, want %q", got, hstsValue)
	}
	assertTLS11Refused(t, site.httpsAddr, "static.gatehouse.test")
	assertRedirect(t, site.httpAddr, "https://static.gatehouse.test")
}

// TestTLSStaticReload replaces the files under a running server: a good
// pair is picked up, a broken one is logged and the old certificate stays.
func TestTLSStaticReload(t *testing.T) {
	authority := newTestCA(t)
	dir := t.TempDir()
	c := TLSConfig{CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem")}
	const name = "reload.gatehouse.test"
	authority.writePair(t, c.CertFile, c.KeyFile, name)
	logger, logs := testLogger(t)
	ts, err := newStaticTLS(t.Context(), c, redirectHTTPS(mustURL(t, "https://"+name)), logger, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ts.Close)
	ln := listenLocal(t)
	srv := &http.Server{Handler: http.NotFoundHandler(), TLSConfig: ts.Config, ErrorLog: log.New(io.Discard, "", 0)}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()
	served := func() *big.Int {
		conn, err := tls.Dial("tcp", addr, &tls.Config{ServerName: name, RootCAs: authority.pool})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber
	}
	waitServed := func(want *big.Int) {
		t.Helper()
		for deadline := time.Now().Add(waitLimit); served().Cmp(want) != 0; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("still serving %v, want %v", served(), want)
			}
		}
	}

	second := authority.writePair(t, c.CertFile, c.KeyFile, name)
	waitServed(second)

	mark := len(logs.String())
	writeFile(t, c.CertFile, []byte("-----BEGIN CERTIFICATE-----\nbroken\n-----END CERTIFICATE-----\n"))
	for deadline := time.Now().Add(waitLimit); !strings.Contains(logs.String()[mark:], "reloading certificate failed"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a broken certificate file was never reported")
		}
	}
	if got := served(); got.Cmp(second) != 0 {
		t.Errorf("after a broken replacement serving %v, want the previous %v", got, second)
	}

	third := authority.writePair(t, c.CertFile, c.KeyFile, name)
	waitServed(third)
}

// TestTLSStartErrorsNameTheFlag: unusable files stop the start with a
// one-line error naming the flag.
func TestTLSStartErrorsNameTheFlag(t *testing.T) {
	authority := newTestCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	authority.writePair(t, certFile, keyFile, "a.gatehouse.test")
	otherCert, otherKey := filepath.Join(dir, "other-cert.pem"), filepath.Join(dir, "other-key.pem")
	authority.writePair(t, otherCert, otherKey, "b.gatehouse.test")
	garbage := filepath.Join(dir, "garbage.pem")
	writeFile(t, garbage, []byte("not PEM"))
	aFile := filepath.Join(dir, "a-file")
	writeFile(t, aFile, []byte("x"))
	missing := filepath.Join(dir, "missing.pem")
	acme := func(caRoot, storage string) TLSConfig {
		return TLSConfig{Domains: []string{"a.gatehouse.test"}, CA: "https://127.0.0.1:1/dir", CARoot: caRoot, Storage: storage}
	}
	for _, tc := range []struct {
		name string
		c    TLSConfig
		flag string
	}{
		{"missing certificate", TLSConfig{CertFile: missing, KeyFile: keyFile}, "--tls-cert"},
		{"missing key", TLSConfig{CertFile: certFile, KeyFile: missing}, "--tls-key"},
		{"certificate not PEM", TLSConfig{CertFile: garbage, KeyFile: keyFile}, "--tls-cert"},
		{"key of another certificate", TLSConfig{CertFile: certFile, KeyFile: otherKey}, "--tls-cert"},
		{"missing ACME root", acme(missing, t.TempDir()), "--acme-ca-root"},
		{"ACME root not PEM", acme(garbage, t.TempDir()), "--acme-ca-root"},
		{"storage under a file", acme("", filepath.Join(aFile, "certs")), "--tls-storage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, err := newTLS(t.Context(), tc.c, mustURL(t, "https://a.gatehouse.test"), slog.New(slog.DiscardHandler))
			if err == nil {
				ts.Close()
				t.Fatal("newTLS succeeded")
			}
			if !strings.Contains(err.Error(), tc.flag) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: want one line naming %s", err, tc.flag)
			}
		})
	}
}

// TestTLSServerWiring runs the real server (newServer, serve) with
// --tls-cert: over HTTPS, Gatehouse's own pages, its problem answers and its
// sign-in redirects carry HSTS (TL3), and the main listener refuses TLS 1.1
// (TL1).
func TestTLSServerWiring(t *testing.T) {
	const name = "wired.gatehouse.test"
	_, addr, authority := startStaticTLS(t, name)

	client := httpsClient(addr, name, authority.pool)
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, tc := range []struct {
		path     string
		status   int
		location string
	}{
		{"/auth/login", http.StatusOK, ""},
		{"/auth/no-such-page", http.StatusNotFound, ""},
		{"/private?x=1", http.StatusFound, "https://" + name + "/auth/login?rd=%2Fprivate%3Fx%3D1"},
	} {
		resp, err := client.Get("https://" + name + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status || resp.Header.Get("Location") != tc.location {
			t.Errorf("GET %s = %d Location %q, want %d %q", tc.path, resp.StatusCode, resp.Header.Get("Location"), tc.status, tc.location)
		}
		if got := resp.Header.Get("Strict-Transport-Security"); got != hstsValue {
			t.Errorf("GET %s: Strict-Transport-Security = %q, want %q", tc.path, got, hstsValue)
		}
	}
	assertTLS11Refused(t, addr, name)
}

// TestOnlyNames: the certificate lookup is asked only for the configured
// names, compared without case and without a final dot (TL2); every other
// server name, the empty one included, is refused before certmagic sees it.
func TestOnlyNames(t *testing.T) {
	var asked []string
	lookup := onlyNames([]string{"App.Gatehouse.test", "b.gatehouse.test."}, func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		asked = append(asked, hello.ServerName)
		return &tls.Certificate{}, nil
	})
	for name, allowed := range map[string]bool{
		"app.gatehouse.test":      true,
		"APP.GATEHOUSE.TEST.":     true,
		"b.gatehouse.test":        true,
		"":                        false,
		"gatehouse.test":          false,
		"x.app.gatehouse.test":    false,
		"app.gatehouse.test.evil": false,
		"other.example":           false,
	} {
		asked = nil
		cert, err := lookup(&tls.ClientHelloInfo{ServerName: name})
		if allowed != (err == nil && cert != nil) {
			t.Errorf("server name %q: certificate %v, error %v; want allowed=%v", name, cert != nil, err, allowed)
		}
		if allowed != (len(asked) == 1) {
			t.Errorf("server name %q: the certificate manager was asked %d times", name, len(asked))
		}
	}
}

// TestTLSClientCanSpeakTLS11 shows that the TLS 1.1 client of
// assertTLS11Refused does connect when a server allows it, so a refusal
// comes from Gatehouse's MinVersion.
func TestTLSClientCanSpeakTLS11(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS10}
	srv.StartTLS()
	defer srv.Close()
	if err := handshake(srv.Listener.Addr().String(), tls11Client("example.com")); err != nil {
		t.Fatalf("TLS 1.1 client against a TLS 1.0+ server: %v", err)
	}
}

// site is a running HTTPS server with a tlsServing, and its --http-listen.
type site struct {
	httpsAddr, httpAddr string
	challenges          atomic.Int64 // HTTP-01 challenge requests answered 200 by HTTPHandler
	stop                func()
}

// serveSite runs newTLS and serves like server.go: an upstream stand-in
// behind hsts on tlsLn, HTTPHandler on httpLn.
func serveSite(t *testing.T, c TLSConfig, base *url.URL, logger *slog.Logger, tlsLn, httpLn net.Listener) *site {
	t.Helper()
	ts, err := newTLS(t.Context(), c, base, logger)
	if err != nil {
		t.Fatal(err)
	}
	if ts.Start != nil {
		if err := ts.Start(); err != nil {
			t.Fatal(err)
		}
	}
	s := &site{httpsAddr: tlsLn.Addr().String(), httpAddr: httpLn.Addr().String()}
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from upstream") })
	discard := log.New(io.Discard, "", 0)
	secure := &http.Server{Handler: hsts(upstream), TLSConfig: ts.Config, ErrorLog: discard}
	plain := &http.Server{Handler: s.countChallenges(ts.HTTPHandler), ErrorLog: discard}
	go secure.ServeTLS(tlsLn, "", "")
	go plain.Serve(httpLn)
	s.stop = sync.OnceFunc(func() {
		secure.Close()
		plain.Close()
		ts.Close()
	})
	t.Cleanup(s.stop)
	return s
}

// countChallenges counts the ACME HTTP-01 requests h answers with 200.
func (s *site) countChallenges(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		if strings.HasPrefix(r.URL.Path, "/.well-known/acme-challenge/") && sw.status == http.StatusOK {
			s.challenges.Add(1)
		}
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the status.
func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

// assertRedirect checks that a plain GET, whatever its Host, is sent to
// target with path and query unchanged.
func assertRedirect(t *testing.T, httpAddr, target string) {
	t.Helper()
	client := &http.Client{
		Transport:     &http.Transport{DialContext: dialTo(httpAddr)},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	const pathAndQuery = "/some/path%2Fx?q=1&rd=%2Fback"
	resp, err := client.Get("http://evil.example" + pathAndQuery)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusPermanentRedirect || resp.Header.Get("Location") != target+pathAndQuery {
		t.Errorf("GET = %d Location %q; want 308 to %q", resp.StatusCode, resp.Header.Get("Location"), target+pathAndQuery)
	}
}

// assertTLS11Refused checks that a client limited to TLS 1.1 gets no connection.
func assertTLS11Refused(t *testing.T, addr, name string) {
	t.Helper()
	if err := handshake(addr, tls11Client(name)); err == nil {
		t.Error("a TLS 1.1 client completed a handshake")
	}
}

// tls11Client offers TLS 1.0 and 1.1 only.
func tls11Client(name string) *tls.Config {
	return &tls.Config{ServerName: name, InsecureSkipVerify: true, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}
}

// handshake connects to addr and completes a TLS handshake.
func handshake(addr string, config *tls.Config) error {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, config)
	if err == nil {
		conn.Close()
	}
	return err
}

// httpsClient sends every request to addr with TLS for serverName.
func httpsClient(addr, serverName string, roots *x509.CertPool) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext:     dialTo(addr),
		TLSClientConfig: &tls.Config{ServerName: serverName, RootCAs: roots},
	}}
}

// dialTo connects to addr whatever the URL says.
func dialTo(addr string) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

// testCA issues certificates for the static-file tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

// newTestCA makes a self-signed CA valid for an hour.
// startStaticTLS runs Gatehouse over HTTPS with a certificate for name
// from a test CA (--tls-cert, --tls-key), and returns it, the address of
// its HTTPS listener and the CA.
func startStaticTLS(t *testing.T, name string) (*gatehouse, string, *testCA) {
	t.Helper()
	authority := newTestCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	authority.writePair(t, certFile, keyFile, name)
	upstream, _ := echoUpstream(t)
	g := startGatehouse(t, filepath.Join(dir, "gatehouse.db"), "--upstream", upstream.URL,
		"--base-url", "https://"+name, "--tls-cert", certFile, "--tls-key", keyFile)
	return g, strings.TrimPrefix(g.URL, "http://"), authority
}

func newTestCA(t *testing.T) *testCA {
	key := newKey(t)
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "gatehouse test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// writePair issues a certificate for name, replaces both files with it and
// its key (each by rename, as a deploy tool would) and returns its serial.
func (ca *testCA) writePair(t *testing.T, certFile, keyFile, name string) *big.Int {
	key := newKey(t)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	template := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	writeFile(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return serial
}

// newKey makes a P-256 key.
func newKey(t *testing.T) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// writeFile replaces path atomically with data.
func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmp.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tmp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		t.Fatal(err)
	}
}

// listenLocal listens on a free port of 127.0.0.1 until the test ends.
func listenLocal(t *testing.T) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// mustURL parses raw.
func mustURL(t *testing.T, raw string) *url.URL {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// testLogger logs into a buffer that is printed when the test fails.
func testLogger(t *testing.T) (*slog.Logger, *syncBuffer) {
	logs := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("gatehouse log:\n%s", logs)
		}
	})
	return slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), logs
}
