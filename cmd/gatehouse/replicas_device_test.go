//go:build unix

package main

import (
	"net/http"
	"testing"
)

// TestReplicasShareDeviceCookieKey: the device cookie's key is one per
// database, not one per process (DV1 across replicas). A browser signs in
// through replica 0 and gets its device cookie; guesses through replicas 1
// and 2 lock the account; that browser still signs in through replica 2,
// which can only tell its cookie valid with replica 0's key, while a
// browser without the cookie stays locked out.
func TestReplicasShareDeviceCookieKey(t *testing.T) {
	db := pg.NewDatabase(t)
	bin := builds.Binary(t, ".")
	up, _ := echoUpstream(t)
	addUser(t, db, "alice@example.com", testPassword)
	rs := startReplicas(t, bin, db, up.URL, 3)

	owner := newClient()
	login(t, owner, rs[0].URL, "alice@example.com", testPassword)
	hasDevice := false
	for _, r := range rs {
		req, _ := http.NewRequest("GET", r.URL+"/auth/login", nil)
		for _, c := range owner.Jar.Cookies(req.URL) {
			hasDevice = hasDevice || c.Name == "gatehouse_device"
		}
	}
	if !hasDevice {
		t.Fatal("no device cookie after signing in through replica 0")
	}

	wrong := jsonBody(map[string]string{"email": "alice@example.com", "password": "not the password at all"})
	for i := range 10 {
		if code, _, body := do(t, http.DefaultClient, "POST", rs[1+i%2].URL+"/auth/login", "application/json", wrong); code != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d %s", i+1, code, body)
		}
	}
	right := jsonBody(map[string]string{"email": "alice@example.com", "password": testPassword})
	if code, _, body := do(t, http.DefaultClient, "POST", rs[2].URL+"/auth/login", "application/json", right); code != http.StatusTooManyRequests {
		t.Fatalf("a browser without a device cookie after the guesses: %d %s, want 429 (account locked)", code, body)
	}
	if code, _, body := do(t, owner, "POST", rs[2].URL+"/auth/login", "application/json", right); code != http.StatusOK {
		t.Fatalf("the owner's browser through replica 2: %d %s, want 200: replica 2 does not accept replica 0's device cookie", code, body)
	}
}
