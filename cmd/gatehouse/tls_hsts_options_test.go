package main

import (
	"bufio"
	"crypto/tls"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// README ("Automatic HTTPS"): "every response on the HTTPS listener, proxied
// ones included, carries HSTS". net/http answers `OPTIONS *` itself, before
// any handler (http.Server's general OPTIONS handler), so that 200 skips the
// hsts wrapper. (Its other own answers, 400 for a malformed request and 431
// for oversized headers, skip it too; those a handler cannot reach.)
func TestTLSOptionsStarCarriesHSTS(t *testing.T) {
	authority := newTestCA(t)
	dir := t.TempDir()
	const name = "options.gatehouse.test"
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	authority.writePair(t, certFile, keyFile, name)
	upstream, _ := echoUpstream(t)
	g := startGatehouse(t, filepath.Join(dir, "gatehouse.db"), "--upstream", upstream.URL,
		"--base-url", "https://"+name, "--tls-cert", certFile, "--tls-key", keyFile)
	addr := strings.TrimPrefix(g.URL, "http://")

	conn, err := tls.Dial("tcp", addr, &tls.Config{ServerName: name, RootCAs: authority.pool})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("OPTIONS * HTTP/1.1\r\nHost: " + name + "\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Strict-Transport-Security"); got != hstsValue {
		t.Errorf("OPTIONS * over HTTPS = %d with Strict-Transport-Security %q, want %q", resp.StatusCode, got, hstsValue)
	}
}
