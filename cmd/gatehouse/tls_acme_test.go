//go:build integration

package main

// The ACME tests run Let's Encrypt's Pebble in-process; they are behind the
// integration build tag so that `go test ./...` does not compile Pebble.
// `make test` runs them (go test -tags integration).

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/letsencrypt/pebble/v2/ca"
	"github.com/letsencrypt/pebble/v2/db"
	"github.com/letsencrypt/pebble/v2/va"
	"github.com/letsencrypt/pebble/v2/wfe"
	"github.com/miekg/dns"
)

// TestTLSACMEHTTP01 obtains a certificate from an in-process Pebble that
// validates HTTP-01 for real against HTTPHandler, then checks what a client
// sees and that a restart reuses the stored certificate.
func TestTLSACMEHTTP01(t *testing.T) {
	const domain = "http01.gatehouse.test"
	logger, _ := testLogger(t)
	tlsLn, httpLn := listenLocal(t), listenLocal(t)
	pebble := startPebble(t, "http-01", port(httpLn), port(tlsLn))
	base := mustURL(t, "https://"+domain+":8443")
	c := TLSConfig{
		Domains:    []string{domain},
		Email:      "ops@gatehouse.test",
		CA:         pebble.directory,
		CARoot:     pebble.caRoot,
		Storage:    t.TempDir(),
		HTTPListen: httpLn.Addr().String(),
	}
	site := serveSite(t, c, base, logger, tlsLn, httpLn)

	leaf := waitForCert(t, site.httpsAddr, domain, pebble.roots)
	if got := site.challenges.Load(); got == 0 {
		t.Error("HTTPHandler answered no HTTP-01 challenge, yet Pebble offered only http-01")
	}
	if got := pebble.orders.Load(); got != 1 {
		t.Errorf("Pebble saw %d orders, want 1", got)
	}

	t.Run("HTTPS GET verifies against Pebble's root and carries HSTS", func(t *testing.T) {
		resp, err := httpsClient(site.httpsAddr, domain, pebble.roots).Get("https://" + domain + "/hello")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || string(body) != "hello from upstream" {
			t.Errorf("GET = %d %q", resp.StatusCode, body)
		}
		if got := resp.Header.Get("Strict-Transport-Security"); got != hstsValue {
			t.Errorf("Strict-Transport-Security = %q, want %q", got, hstsValue)
		}
	})
	t.Run("plain HTTP redirects to the base URL host, path and query kept", func(t *testing.T) {
		assertRedirect(t, site.httpAddr, "https://"+base.Host)
	})
	t.Run("no certificate for other server names", func(t *testing.T) {
		for _, name := range []string{"other.gatehouse.test", ""} {
			if err := handshake(site.httpsAddr, &tls.Config{ServerName: name, InsecureSkipVerify: true}); err == nil {
				t.Errorf("handshake with server name %q succeeded", name)
			}
		}
		if got := pebble.orders.Load(); got != 1 {
			t.Errorf("an unknown server name led to an order: %d orders, want 1", got)
		}
	})
	t.Run("TLS 1.1 refused", func(t *testing.T) {
		assertTLS11Refused(t, site.httpsAddr, domain)
	})
	t.Run("restart serves the stored certificate without a new order", func(t *testing.T) {
		site.stop()
		tlsLn, httpLn := listenLocal(t), listenLocal(t)
		c := c
		c.HTTPListen = httpLn.Addr().String()
		restarted := serveSite(t, c, base, logger, tlsLn, httpLn)
		again := waitForCert(t, restarted.httpsAddr, domain, pebble.roots)
		if again.SerialNumber.Cmp(leaf.SerialNumber) != 0 {
			t.Errorf("after restart serial %v, want the stored %v", again.SerialNumber, leaf.SerialNumber)
		}
		if got := pebble.orders.Load(); got != 1 {
			t.Errorf("Pebble saw %d orders after the restart, want 1", got)
		}
	})
}

// TestTLSACMETLSALPN01 has Pebble offer only TLS-ALPN-01, which it validates
// against the main listener through tlsServing.Config.
func TestTLSACMETLSALPN01(t *testing.T) {
	const domain = "alpn.gatehouse.test"
	logger, _ := testLogger(t)
	tlsLn, httpLn := listenLocal(t), listenLocal(t)
	pebble := startPebble(t, "tls-alpn-01", port(httpLn), port(tlsLn))
	c := TLSConfig{
		Domains:    []string{domain},
		CA:         pebble.directory,
		CARoot:     pebble.caRoot,
		Storage:    t.TempDir(),
		HTTPListen: httpLn.Addr().String(),
	}
	site := serveSite(t, c, mustURL(t, "https://"+domain), logger, tlsLn, httpLn)

	leaf := waitForCert(t, site.httpsAddr, domain, pebble.roots)
	if len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != domain {
		t.Errorf("certificate names %v, want [%s]", leaf.DNSNames, domain)
	}
	if got := site.challenges.Load(); got != 0 {
		t.Errorf("HTTPHandler answered %d HTTP-01 challenges, yet Pebble offered only tls-alpn-01", got)
	}
	if got := pebble.orders.Load(); got != 1 {
		t.Errorf("Pebble saw %d orders, want 1", got)
	}
}

// testPebble is Let's Encrypt's test CA, run in-process on 127.0.0.1.
type testPebble struct {
	directory string         // ACME directory URL
	caRoot    string         // PEM file of the directory's HTTPS certificate, for --acme-ca-root
	roots     *x509.CertPool // Pebble's issuing root
	orders    atomic.Int64   // new-order requests
}

// startPebble runs Pebble with real challenge validation: its VA resolves
// every name to 127.0.0.1 through an in-test DNS server and connects to
// httpPort (HTTP-01) and tlsPort (TLS-ALPN-01). Authorizations offer only
// the challenge type offer, so each test knows which path is exercised.
func startPebble(t *testing.T, offer string, httpPort, tlsPort int) *testPebble {
	t.Setenv("PEBBLE_VA_NOSLEEP", "1")      // no random 0-5 s wait before validating
	t.Setenv("PEBBLE_WFE_NONCEREJECT", "0") // no deliberate badNonce errors
	t.Setenv("PEBBLE_AUTHZREUSE", "0")      // every order validates afresh
	logs := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pebble log:\n%s", logs)
		}
	})
	pebbleLog := log.New(logs, "pebble ", log.Lmicroseconds)
	store := db.NewMemoryStore()
	authority := ca.New(pebbleLog, store, "", "ecdsa", 0, 1, map[string]ca.Profile{"default": {Description: "default"}})
	validator := va.New(pebbleLog, httpPort, tlsPort, false, startDNS(t), store)
	frontEnd := wfe.New(pebbleLog, store, validator, authority, []string{"pebble.letsencrypt.org"}, false, false, 0, 0)
	acme := frontEnd.Handler()

	p := &testPebble{roots: x509.NewCertPool()}
	p.roots.AddCert(authority.GetRootCert(0).Cert)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/order-plz": // Pebble's new-order path
			p.orders.Add(1)
		case strings.HasPrefix(r.URL.Path, "/authZ/"): // an authorization and its challenges
			offerOnly(w, r, acme, offer)
			return
		}
		acme.ServeHTTP(w, r)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	p.directory = srv.URL + wfe.DirectoryPath
	p.caRoot = filepath.Join(t.TempDir(), "pebble-directory.pem")
	writeFile(t, p.caRoot, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	return p
}

// offerOnly serves an authorization with its challenges cut to one type.
func offerOnly(w http.ResponseWriter, r *http.Request, acme http.Handler, offer string) {
	rec := httptest.NewRecorder()
	acme.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	var authz map[string]any
	if json.Unmarshal(body, &authz) == nil {
		if challenges, ok := authz["challenges"].([]any); ok {
			var kept []any
			for _, c := range challenges {
				if m, ok := c.(map[string]any); ok && m["type"] == offer {
					kept = append(kept, c)
				}
			}
			authz["challenges"] = kept
			body, _ = json.Marshal(authz)
		}
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(rec.Code)
	w.Write(body)
}

// startDNS answers every A query with 127.0.0.1 (and nothing else), over
// TCP as Pebble's VA asks, and returns its address.
func startDNS(t *testing.T) string {
	ln := listenLocal(t)
	started := make(chan struct{})
	srv := &dns.Server{Listener: ln, NotifyStartedFunc: func() { close(started) }, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		reply := new(dns.Msg)
		reply.SetReply(req)
		for _, q := range req.Question {
			if q.Qtype == dns.TypeA {
				reply.Answer = append(reply.Answer, &dns.A{
					Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60},
					A:   net.IPv4(127, 0, 0, 1),
				})
			}
		}
		w.WriteMsg(reply)
	})}
	go srv.ActivateAndServe()
	<-started
	t.Cleanup(func() { srv.Shutdown() })
	return ln.Addr().String()
}

// waitForCert polls until addr completes a verified handshake for name and
// returns the leaf certificate.
func waitForCert(t *testing.T, addr, name string, roots *x509.CertPool) *x509.Certificate {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{ServerName: name, RootCAs: roots})
		if err == nil {
			defer conn.Close()
			return conn.ConnectionState().PeerCertificates[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no verified certificate for %s at %s: %v", name, addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// port is the TCP port of ln.
func port(ln net.Listener) int { return ln.Addr().(*net.TCPAddr).Port }
