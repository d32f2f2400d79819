//go:build unix

package main

import (
	"net/http"
	"testing"
)

// TestReplicasShareDeviceFailureBucket: CONTRACT v2 "Rate limits and
// throttles hold across replicas (... counted in the store)". A browser
// with a valid device cookie for the account has its own failure bucket
// (DV1: 10 failed sign-ins per 15 minutes). That bucket is counted in each
// process's memory only (authflows/throttle.go's limits.share shares every
// bucket but deviceFailures), so the same browser, its guesses spread over
// three replicas, gets ten per replica: thirty guesses instead of ten.
func TestReplicasShareDeviceFailureBucket(t *testing.T) {
	db := pg.NewDatabase(t)
	bin := builds.Binary(t, ".")
	up, _ := echoUpstream(t)
	addUser(t, db, "alice@example.com", testPassword)
	rs := startReplicas(t, bin, db, up.URL, 3)

	browser := newClient() // signed in once: it holds a device cookie for alice
	login(t, browser, rs[0].URL, "alice@example.com", testPassword)

	wrong := jsonBody(map[string]string{"email": "alice@example.com", "password": "not the password at all"})
	passed := 0
	for i := range 30 {
		code, _, body := do(t, browser, "POST", rs[i%3].URL+"/auth/login", "application/json", wrong)
		if code == http.StatusTooManyRequests {
			break
		}
		if code != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d %s", i+1, code, body)
		}
		passed++
	}
	if passed > 10 {
		t.Fatalf("one browser with a device cookie made %d failed guesses in a row spread over 3 replicas; the device bucket allows 10 per 15 minutes on one", passed)
	}
}
