package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// Review (x6): behind the shipped forward-auth examples every request to
// /auth/ reaches Gatehouse from the front proxy's address, and neither the
// examples nor their Gatehouse command line (`--forward-auth-trusted
// 127.0.0.1/32`, no `--trusted-proxies`) tell Gatehouse who the client was.
// The per-client-IP limits (60 sign-ins, 60 forgot requests a minute) are
// then one bucket for the whole internet: one anonymous client that sends
// 60 wrong passwords a minute through the front locks every user out of
// password sign-in (429), and 60 forgot requests silently stop every reset
// mail. The contract's floor is per client IP ("60 requests per client IP
// per minute ... pass before any throttling"); PX2/LG2 want the client's IP.
//
// The attacker talks to the front from 127.0.0.2, alice from 127.0.0.1: two
// clients, which Gatehouse reached directly would count apart.
func TestFrontedClientsDoNotShareOneThrottle(t *testing.T) {
	for _, kind := range []string{"nginx", "caddy"} {
		t.Run(kind, func(t *testing.T) {
			front := freeAddr(t)
			g, app, _ := startFrontedGatehouse(t, front, "http")
			startFront(t, kind, front, g, app)
			base := "http://" + front

			attacker := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext}}
			post := func(c *http.Client, body string) int {
				t.Helper()
				req, _ := http.NewRequest("POST", base+"/auth/login", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Origin", base)
				res, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				return res.StatusCode
			}
			// 60 wrong passwords, each for another unknown address (no
			// account's own failure bucket is touched), from one client.
			for i := range 60 {
				if code := post(attacker, fmt.Sprintf(`{"email":"nobody%d@example.com","password":"wrong-password-%d"}`, i, i)); code != http.StatusUnauthorized {
					t.Fatalf("attacker's sign-in %d: %d, want 401", i, code)
				}
			}
			// Another client, with the right password, at its first attempt.
			code := post(http.DefaultClient, `{"email":"alice@example.com","password":"`+testPassword+`"}`)
			if code != http.StatusOK {
				t.Errorf("alice's first sign-in through %s after another client's 60 failures: %d, want 200 "+
					"(every client shares the front's IP bucket: the examples set no --trusted-proxies / X-Forwarded-For for /auth/)", kind, code)
			}
		})
	}
}
