package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bearer credentials behind the real nginx and Caddy on their example
// configs: a valid API token passes a tokens route, and the per-client
// floor of bad credentials holds however the client spells
// X-Forwarded-For: the front names the client, never the client itself.
func TestNginxForwardAuthBearer(t *testing.T) { checkFrontedBearer(t, "nginx") }
func TestCaddyForwardAuthBearer(t *testing.T) { checkFrontedBearer(t, "caddy") }

func checkFrontedBearer(t *testing.T, kind string) {
	config := filepath.Join(t.TempDir(), "gatehouse.yaml")
	if err := os.WriteFile(config, []byte("routes:\n  - path: /api/\n    tokens: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	front := freeAddr(t)
	g, app, hits := startFrontedGatehouse(t, front, "http", "--config", config)
	startFront(t, kind, front, g, app)
	code, out, errOut := cli(t, "", "tokens", "create", "--name", "ci", "--user", "alice@example.com", "--db", g.DB)
	if code != 0 {
		t.Fatalf("tokens create: %d %s", code, errOut)
	}
	token := strings.TrimSpace(out)
	send := func(token, forwardedFor string) int {
		t.Helper()
		r, _ := http.NewRequest(http.MethodGet, "http://"+front+"/api/x", nil)
		r.Header.Set("Accept", "application/json")
		r.Header.Set("Authorization", "Bearer "+token)
		if forwardedFor != "" {
			r.Header.Set("X-Forwarded-For", forwardedFor)
		}
		res, err := newClient().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := send(token, ""); code != http.StatusOK {
		t.Fatalf("valid API token through %s: %d", kind, code)
	}
	before := *hits
	bad := "ghp_" + strings.Repeat("A", 43)
	throttled := false
	for i := range 70 { // the floor is 60 a minute
		code := send(bad, fmt.Sprintf("198.51.100.%d", i+1))
		if code == http.StatusOK {
			t.Fatalf("unknown token through %s: 200", kind)
		}
		throttled = throttled || code != http.StatusUnauthorized // 429, which nginx's auth_request answers as 500
	}
	if !throttled {
		t.Errorf("70 bad tokens through %s, each with another forged X-Forwarded-For: never throttled", kind)
	}
	if *hits != before {
		t.Errorf("bad tokens reached the app %d times", *hits-before)
	}
}
