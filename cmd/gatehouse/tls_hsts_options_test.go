package main

import (
	"bufio"
	"crypto/tls"
	"net/http"
	"testing"
)

// README ("Automatic HTTPS"): every response on the HTTPS listener carries
// HSTS, `OPTIONS *` included: net/http would answer it itself, before any
// handler and so without HSTS, but proxy.NewServer hands it to the handler.
func TestTLSOptionsStarCarriesHSTS(t *testing.T) {
	const name = "options.gatehouse.test"
	_, addr, authority := startStaticTLS(t, name)

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
