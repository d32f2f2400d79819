package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// sessionOf reads the stored session of the client's session cookie.
func sessionOf(t *testing.T, g *gatehouse, c *http.Client) storage.Session {
	t.Helper()
	u, _ := url.Parse(g.URL)
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "gatehouse_session" {
			s, err := g.srv.store.Session(t.Context(), storage.HashSecret(ck.Value))
			if err != nil {
				t.Fatalf("session of the cookie: %v", err)
			}
			return s
		}
	}
	t.Fatal("no session cookie")
	return storage.Session{}
}

// Through the real server: a password change on the account page gives
// the browser a new session that keeps the replaced one's sign-in time,
// absolute expiry and groups, so repeating it never outlives
// --session-ttl.
func TestServerPasswordChangeKeepsExpiry(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	addUser(t, db, "alice@example.com", testPassword)
	up, _ := echoUpstream(t)
	g := startGatehouse(t, db, "--upstream", up.URL, "--session-ttl", "1h")
	c := newClient()
	login(t, c, g.URL, "alice@example.com", testPassword)
	before := sessionOf(t, g, c)
	current := testPassword
	for _, next := range []string{"a first new passphrase", "a second new passphrase"} {
		body, _ := json.Marshal(map[string]string{"current_password": current, "password": next, "confirm": next})
		req, _ := http.NewRequest(http.MethodPost, g.URL+"/auth/account/password", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("password change: %d", resp.StatusCode)
		}
		current = next
		after := sessionOf(t, g, c)
		if after.IDHash == before.IDHash {
			t.Fatal("the password change kept the session id")
		}
		if !after.ExpiresAt.Equal(before.ExpiresAt) || !after.CreatedAt.Equal(before.CreatedAt) || after.Groups != before.Groups {
			t.Fatalf("re-issued session: created %v expires %v groups %q; want the sign-in's %v %v %q",
				after.CreatedAt, after.ExpiresAt, after.Groups, before.CreatedAt, before.ExpiresAt, before.Groups)
		}
	}
}
