package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// Issue 10, item 8: an idle TTL too short for last-seen writes is refused
// with a flag error; short ones that work are accepted (the touch interval
// follows them, see session.TouchIntervalFor).
func TestIdleTTLFlag(t *testing.T) {
	for _, tc := range []struct {
		value string
		ok    bool
	}{{"0", true}, {"10s", true}, {"45s", true}, {"24h", true}, {"9s", false}, {"1ms", false}} {
		var out, errOut bytes.Buffer
		_, err := parseServe([]string{"--upstream", "http://127.0.0.1:3000", "--session-idle-ttl", tc.value}, envOf(nil), &out)
		if (err == nil) != tc.ok {
			t.Errorf("--session-idle-ttl %s: err %v, want ok %v", tc.value, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--session-idle-ttl") {
			t.Errorf("--session-idle-ttl %s: error %q does not name the flag", tc.value, err)
		}
		if !tc.ok {
			code := run([]string{"--upstream", "http://127.0.0.1:3000", "--session-idle-ttl", tc.value}, nil, &out, &errOut, envOf(nil))
			if code != 2 || strings.Count(strings.TrimSpace(errOut.String()), "\n") != 0 {
				t.Errorf("--session-idle-ttl %s: exit %d, stderr %q; want 2 and one line", tc.value, code, errOut.String())
			}
		}
	}
}

// Issue 10, item 9: the sweep runs in step with the TTLs, not on a fixed
// 10-minute clock.
func TestSweepInterval(t *testing.T) {
	for _, tc := range []struct {
		session, idle, reset time.Duration
		want                 time.Duration
	}{
		{168 * time.Hour, 24 * time.Hour, 30 * time.Minute, 150 * time.Second}, // OAuth flows: 10 min
		{168 * time.Hour, 0, 4 * time.Minute, time.Minute},
		{time.Minute, 0, 30 * time.Minute, 15 * time.Second},
		{168 * time.Hour, 20 * time.Second, 30 * time.Minute, 5 * time.Second},
		{2 * time.Second, 0, 30 * time.Minute, time.Second}, // floor
	} {
		got := sweepInterval(Config{SessionTTL: tc.session, SessionIdleTTL: tc.idle, ResetTokenTTL: tc.reset})
		if got != tc.want {
			t.Errorf("sweepInterval(session %s, idle %s, reset %s) = %s, want %s", tc.session, tc.idle, tc.reset, got, tc.want)
		}
	}
}

// The running server sweeps a session that expired a few seconds after its
// TTL, not ten minutes later.
func TestSweepFollowsShortTTL(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	addUser(t, db, "alice@example.com", "correct horse battery staple")
	g := startGatehouse(t, db, "--upstream", "http://127.0.0.1:1", "--session-ttl", "8s", "--session-idle-ttl", "0")
	u, err := g.srv.store.UserByEmail(t.Context(), "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	h := storage.HashSecret("short-lived session")
	now := time.Now()
	err = g.srv.store.CreateSession(t.Context(), storage.Session{IDHash: h, UserID: u.ID, Email: u.Email,
		CreatedAt: now, ExpiresAt: now.Add(time.Second), LastSeen: now})
	if err != nil {
		t.Fatal(err)
	}
	// Watchdog only: with an 8 s TTL the sweep runs every 2 s.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if _, err := g.srv.store.Session(t.Context(), h); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an expired session was not swept within a minute of its expiry")
		}
	}
}
