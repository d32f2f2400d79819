package main

import (
	"path/filepath"
	"testing"
)

// PW1: "Strength is judged by zxcvbn … with the user's email, its parts and
// the app's name as context." The web flows (reset, invite, account page)
// pass --app-name and the base URL's host; the admin socket's HashPassword
// (server.go) calls NewPasswordHash without them, so `users add` and `users
// set-password` through a running server accept a password built from the
// app's name that the reset form refuses.
func TestAdminSocketPasswordRulesKnowTheAppName(t *testing.T) {
	up, _ := echoUpstream(t)
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	startGatehouse(t, db, "--upstream", up.URL, "--app-name", "Zephyrcloud")

	const builtFromAppName = "zephyrcloud2026!"
	if code, out, errOut := cli(t, builtFromAppName+"\n", "users", "add", "eve@example.com", "--password-stdin", "--db", db); code == 0 {
		t.Errorf("users add through the socket accepted %q with --app-name Zephyrcloud (exit 0): %s%s", builtFromAppName, out, errOut)
	}
	if code, _, errOut := cli(t, testPassword+"\n", "users", "add", "fay@example.com", "--password-stdin", "--db", db); code != 0 {
		t.Fatalf("users add fay: exit %d: %s", code, errOut)
	}
	if code, out, errOut := cli(t, builtFromAppName+"\n", "users", "set-password", "fay@example.com", "--password-stdin", "--db", db); code == 0 {
		t.Errorf("users set-password through the socket accepted %q with --app-name Zephyrcloud (exit 0): %s%s", builtFromAppName, out, errOut)
	}
}
