package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// A user's API token stops on the next request through the running server
// (the real bbolt store, its commands through the admin socket) when its
// user is disabled, when the token is revoked, when its user is deleted,
// and from its expiry on; enabling the user again brings it back.
func TestUserTokenStopsWithItsUserEndToEnd(t *testing.T) {
	up, hits := echoUpstream(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "g.db")
	addUser(t, db, "ann@example.com", testPassword)
	addUser(t, db, "bob@example.com", testPassword)
	path := filepath.Join(dir, "gatehouse.yaml")
	replaceFile(t, path, "routes:\n  - path: /api/\n    tokens: true\n")
	g := startGatehouse(t, db, "--upstream", up.URL, "--config", path, "--mode", "401")
	run := func(args ...string) string {
		t.Helper()
		code, out, errOut := cli(t, "", append(args, "--db", db)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return strings.TrimSpace(out)
	}
	// Through the running server's socket: the file is the server's.
	ann := run("tokens", "create", "--name", "ann-script", "--user", "ann@example.com")
	bob := run("tokens", "create", "--name", "bob-script", "--user", "bob@example.com")
	refused := func(what, token string) {
		t.Helper()
		before := *hits
		code, _ := bearerGet(t, g.URL+"/api/x", token)
		if code != http.StatusUnauthorized || *hits != before {
			t.Errorf("%s: %d (upstream reached: %v), want 401 invalid_token", what, code, *hits != before)
		}
	}
	accepted := func(what, token, email string) {
		t.Helper()
		code, h := bearerGet(t, g.URL+"/api/x", token)
		if code != http.StatusOK || h.Get("X-Forwarded-Email") != email {
			t.Fatalf("%s: %d %v", what, code, h)
		}
	}
	accepted("ann's token", ann, "ann@example.com")
	accepted("bob's token", bob, "bob@example.com")

	run("users", "disable", "ann@example.com")
	refused("token of a disabled user", ann)
	run("users", "enable", "ann@example.com")
	accepted("token of a user enabled again", ann, "ann@example.com")

	var annID string
	list, err := g.srv.store.APITokens(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range list {
		if tok.Name == "ann-script" {
			annID = tok.ID
		}
	}
	run("tokens", "revoke", annID)
	refused("revoked token", ann)

	run("users", "delete", "bob@example.com")
	refused("token of a deleted user", bob)

	// A token past its expiry, as the store holds it (no clock to wait on).
	user, err := g.srv.store.UserByEmail(t.Context(), "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	secret, h := storage.NewAPIToken()
	now := time.Now()
	if err := g.srv.store.CreateAPIToken(t.Context(), storage.APIToken{
		ID: storage.NewAPITokenID(), Hash: h, Name: "old", UserID: user.ID,
		CreatedAt: now.Add(-2 * time.Hour), ExpiresAt: now.Add(-time.Hour),
	}); err != nil {
		t.Fatal(err)
	}
	refused("expired token", secret)
}
