package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// When Gatehouse terminates TLS itself, its session cookie must be Secure:
// with --tls-domain it also runs the plain-HTTP listener (:80) for the same
// host, and a browser sends a cookie without Secure there in clear text on
// any http:// link or typed address before HSTS is known, where a network
// attacker reads it. The start refuses an http:// --base-url in this case
// (CONTRACT: "An http:// base URL while Gatehouse terminates TLS is refused
// at start"); --cookie-secure=false (or GATEHOUSE_COOKIE_SECURE=false, e.g. a
// leftover of a development environment file) undoes the same protection and
// must be refused the same way, with one line naming the flag.
func TestTLSRefusesCookieWithoutSecure(t *testing.T) {
	authority := newTestCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	authority.writePair(t, certFile, keyFile, "app.gatehouse.test")
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
	}{
		"ACME, flag": {args: []string{"--tls-domain", "app.gatehouse.test", "--cookie-secure=false"}},
		"ACME, environment": {
			args: []string{"--tls-domain", "app.gatehouse.test"},
			env:  map[string]string{"GATEHOUSE_COOKIE_SECURE": "false"},
		},
		"static certificate with --http-listen": {args: []string{"--tls-cert", certFile, "--tls-key", keyFile,
			"--base-url", "https://app.gatehouse.test", "--http-listen", "127.0.0.1:0", "--cookie-secure=false"}},
	} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"--upstream", "http://127.0.0.1:3000", "--db", filepath.Join(dir, "g.db")}, tc.args...)
			c, err := parseServe(args, envOf(tc.env), &bytes.Buffer{})
			if err == nil {
				t.Fatalf("start accepted: TLS terminated by Gatehouse (plain HTTP on %q too), yet the session cookie %q is sent without Secure (cookie-secure=%v)",
					c.TLS.HTTPListen, c.CookieName, c.CookieSecure)
			}
			if !strings.Contains(err.Error(), "--cookie-secure") {
				t.Errorf("error %q does not name --cookie-secure", err)
			}
		})
	}
}
