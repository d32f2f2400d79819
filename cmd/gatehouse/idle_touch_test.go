package main

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

// TestShortIdleTTLKeepsAnActiveSession: README, --session-idle-ttl "(0
// disables, else at least 10s); last-seen is written every quarter of it,
// at most every minute", and SS5. With --session-idle-ttl 10s a user making
// a request every second is never idle. The server builds the gate's
// LastSeen with TouchEvery 0 and hands proxy.New only the Gate, not
// Config.LastSeen, so proxy.New never sets TouchEvery from the idle TTL
// (proxy/proxy.go:175): the touch interval stays one minute, last-seen is
// never written within the 10 s, and the active session is refused as idle
// after 10 s. Any --session-idle-ttl under about 75 s signs active users out.
func TestShortIdleTTLKeepsAnActiveSession(t *testing.T) {
	up, _ := echoUpstream(t)
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	addUser(t, db, "alice@example.com", testPassword)
	g := startGatehouse(t, db, "--upstream", up.URL, "--session-idle-ttl", "10s", "--mode", "401")
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	code, h, body := do(t, c, "POST", g.URL+"/auth/login", "application/json",
		jsonBody(map[string]string{"email": "alice@example.com", "password": testPassword}))
	if code != http.StatusOK {
		t.Fatalf("login: %d %s", code, body)
	}
	id := sessionCookieOf(t, h).Value
	for i := range 14 {
		time.Sleep(time.Second)
		if code, _, _ := do(t, c, "GET", g.URL+"/app", "", "", "Cookie", "gatehouse_session="+id); code != http.StatusOK {
			t.Fatalf("request %d s after sign-in, one a second (idle TTL 10s): %d, want 200: an active session was judged idle", i+1, code)
		}
	}
}
