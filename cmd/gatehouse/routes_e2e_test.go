package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// bearerGet sends GET u with the token and returns the status and the
// headers the echo upstream saw (nil when it was not reached).
func bearerGet(t *testing.T, u, token string, header ...string) (int, http.Header) {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Accept", "application/json")
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	res, err := newClient().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var echo struct {
		Header http.Header `json:"header"`
	}
	if res.StatusCode == http.StatusOK {
		if err := json.NewDecoder(res.Body).Decode(&echo); err != nil {
			t.Fatal(err)
		}
	}
	return res.StatusCode, echo.Header
}

// The route rules of the file decide each request of the running server,
// and a rule changed in the file decides the next request within 5 s (the
// watcher) or at once on SIGHUP (reload).
func TestRouteRulesServedAndReloaded(t *testing.T) {
	up, _ := echoUpstream(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "gatehouse.yaml")
	replaceFile(t, path, "routes:\n  - path: /static/\n    allow: public\n  - path: /private/\n    allow: deny\n")
	g := startGatehouse(t, filepath.Join(dir, "g.db"), "--upstream", up.URL, "--config", path, "--mode", "401")
	status := func(p string) int {
		code, _ := get(t, newClient(), g.URL+p)
		return code
	}
	for p, want := range map[string]int{"/static/x": 200, "/private/x": 403, "/static/..%2fprivate/x": 403, "/other": 401, "/private?x=/static/": 403} {
		if got := status(p); got != want {
			t.Errorf("GET %s = %d, want %d", p, got, want)
		}
	}
	replaceFile(t, path, "routes:\n  - path: /private/\n    allow: public\n")
	waitUntil(t, "the changed rule deciding requests", func() bool { return status("/private/x") == http.StatusOK })
	if got := status("/static/x"); got != http.StatusUnauthorized {
		t.Errorf("GET /static/x after the rule went: %d, want 401", got)
	}
	replaceFile(t, path, "routes:\n  - path: /private/\n    allow: deny\n")
	g.srv.reload() // SIGHUP
	waitUntil(t, "the rule in force after SIGHUP", func() bool { return status("/private/x") == http.StatusForbidden })
}

// API tokens end to end through the real server: a user's token acts as
// the user (with the assertion's amr ["token"]) and stops when revoked; a
// service token acts as service:NAME and passes its route's groups; a
// bearer anywhere but a tokens route is ignored and forwarded; a cookie
// beside a bearer is not what counts.
func TestAPITokensEndToEnd(t *testing.T) {
	up, _ := echoUpstream(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "g.db")
	addUser(t, db, "ann@example.com", testPassword)
	create := func(args ...string) string {
		code, out, errOut := cli(t, "", append(append([]string{"tokens", "create"}, args...), "--db", db)...)
		if code != 0 {
			t.Fatalf("tokens create: %d %s", code, errOut)
		}
		return strings.TrimSpace(out)
	}
	user := create("--name", "script", "--user", "ann@example.com")
	service := create("--name", "deploys", "--service", "deploy", "--group", "oidc:deployers")
	path := filepath.Join(dir, "gatehouse.yaml")
	replaceFile(t, path, "routes:\n  - path: /api/deploy/\n    tokens: true\n    groups: [oidc:deployers]\n  - path: /api/\n    tokens: true\n")
	g := startGatehouse(t, db, "--upstream", up.URL, "--config", path, "--mode", "401")

	code, h := bearerGet(t, g.URL+"/api/x", user)
	if code != http.StatusOK || h.Get("X-Forwarded-Email") != "ann@example.com" || h.Get("Authorization") != "" || h.Get("X-Gatehouse-Jwt-Assertion") == "" {
		t.Fatalf("user token: %d %v", code, h)
	}
	if code, _ := bearerGet(t, g.URL+"/api/deploy/x", user); code != http.StatusForbidden {
		t.Errorf("user token on the deployers' route: %d, want 403", code)
	}
	code, h = bearerGet(t, g.URL+"/api/deploy/x", service)
	if code != http.StatusOK || h.Get("X-Forwarded-User") != "service:deploy" || h.Get("X-Forwarded-Email") != "" || h.Get("X-Forwarded-Groups") != "oidc:deployers" {
		t.Errorf("service token: %d %v", code, h)
	}
	if code, _ := bearerGet(t, g.URL+"/app", service); code != http.StatusUnauthorized {
		t.Errorf("service token off a tokens route: %d, want 401 (judged as without it)", code)
	}
	c := newClient()
	login(t, c, g.URL, "ann@example.com", testPassword)
	r, _ := http.NewRequest(http.MethodGet, g.URL+"/app", nil)
	r.Header.Set("Authorization", "Bearer app-own")
	res, err := c.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	var echo struct {
		Header http.Header `json:"header"`
	}
	_ = json.NewDecoder(res.Body).Decode(&echo)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || echo.Header.Get("Authorization") != "Bearer app-own" {
		t.Errorf("session with the app's own bearer off a tokens route: %d, Authorization %q", res.StatusCode, echo.Header.Get("Authorization"))
	}
	// A signed-in browser sending a bad bearer on a tokens route: the bearer counts.
	r, _ = http.NewRequest(http.MethodGet, g.URL+"/api/x", nil)
	r.Header.Set("Authorization", "Bearer ghp_"+strings.Repeat("A", 43))
	res, err = c.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") != `Bearer error="invalid_token"` {
		t.Errorf("cookie and an unknown token: %d %q, want 401 invalid_token", res.StatusCode, res.Header.Get("WWW-Authenticate"))
	}
	// Revoked in the running server's store: refused on the next request.
	var ids []string
	list, err := g.srv.store.APITokens(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range list {
		if tok.UserID != "" {
			ids = append(ids, tok.ID)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("user tokens: %v", ids)
	}
	if _, err := g.srv.store.RevokeAPIToken(t.Context(), ids[0]); err != nil {
		t.Fatal(err)
	}
	if code, _ := bearerGet(t, g.URL+"/api/x", user); code != http.StatusUnauthorized {
		t.Errorf("revoked token: %d, want 401", code)
	}
}
