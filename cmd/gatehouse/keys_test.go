package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// `gatehouse keys rotate` while the server holds the bbolt file goes
// through --admin-socket: it succeeds, and the server signs with the new
// key from now on, the old key still published.
func TestKeysRotateWhileServing(t *testing.T) {
	up, _ := echoUpstream(t)
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	addUser(t, db, "alice@example.com", testPassword)
	g := startGatehouse(t, db, "--upstream", up.URL, "--assertion-audience", "https://app.example.com")
	c := newClient()
	login(t, c, g.URL, "alice@example.com", testPassword)
	oldKid, _ := verifyWith(t, fetchJWKS(t, g.URL+"/auth/.well-known/jwks.json"), upstreamAssertion(t, c, g), g.URL, "https://app.example.com")

	code, out, errOut := cli(t, "", "keys", "rotate", "--db", db)
	if code != 0 {
		t.Fatalf("keys rotate while serving: exit %d: %s", code, errOut)
	}
	set := fetchJWKS(t, g.URL+"/auth/.well-known/jwks.json")
	if len(set.Keys) != 2 {
		t.Fatalf("%d keys published right after rotate, want 2", len(set.Keys))
	}
	// A token minted after the rotation (a new sign-in: a session's token
	// is reused until it nears its end) carries the new key.
	c2 := newClient()
	login(t, c2, g.URL, "alice@example.com", testPassword)
	newKid, _ := verifyWith(t, set, upstreamAssertion(t, c2, g), g.URL, "https://app.example.com")
	if newKid == oldKid || !strings.Contains(out, newKid) {
		t.Fatalf("after rotate the next request is signed by %s (old %s); rotate said %q", newKid, oldKid, out)
	}
}

// keys, like users and sessions, has --help and refuses typos with exit 2.
func TestKeysHelpAndTypos(t *testing.T) {
	if code, out, _ := cli(t, "", "keys", "--help"); code != 0 || !strings.Contains(out, "  rotate ") {
		t.Errorf("keys --help: %d %q", code, out)
	}
	if code, out, _ := cli(t, "", "keys", "rotate", "--help"); code != 0 || !strings.Contains(out, "--admin-socket") || !strings.Contains(out, "--db") {
		t.Errorf("keys rotate --help: %d %q", code, out)
	}
	if code, _, errOut := cli(t, "", "keys", "rotat"); code != 2 || !strings.Contains(errOut, `unknown command "rotat" (did you mean rotate?); see gatehouse keys --help`) {
		t.Errorf("keys typo: %d %q", code, errOut)
	}
	if code, _, errOut := cli(t, "", "keys", "rotate", "--dbb", "x"); code != 2 || !strings.Contains(errOut, "unknown flag --dbb (did you mean --db?)") {
		t.Errorf("keys flag typo: %d %q", code, errOut)
	}
}
