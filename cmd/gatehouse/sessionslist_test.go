package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/admin"
)

// sessionsOnly is an admin.API whose Sessions returns fixed records.
type sessionsOnly struct {
	admin.API
	sessions []admin.Session
}

func (s sessionsOnly) Sessions(context.Context, string) ([]admin.Session, error) {
	return s.sessions, nil
}

// `gatehouse sessions list` prints each session's browser, the User-Agent
// header the user's browser sent at sign-in: text any signed-in user
// chooses, printed on the operator's terminal. oneLine turns C0 controls and
// DEL into spaces ("keeps a user agent from breaking the table"), but lets
// the C1 controls (U+0080-U+009F; U+009B is CSI, U+009D OSC, which terminals
// such as xterm act on) and the bidirectional overrides through, so a user
// agent can still rewrite the operator's screen or reorder what the table
// shows. Net/http accepts these bytes in a header value (obs-text).
func TestSessionsListNeutralizesTerminalControls(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, ua := range []string{
		"Mozilla/5.0 \u009b2J\u009b31mall clear", // C1 CSI: clear screen, red
		"Mozilla/5.0 \u009d0;pwned\u009c",        // C1 OSC: set the window title
		"Mozilla/5.0 \u202etxt.exe",              // right-to-left override
	} {
		api := sessionsOnly{sessions: []admin.Session{{CreatedAt: at, LastSeen: at, ExpiresAt: at.Add(time.Hour), Method: "pwd", IP: "192.0.2.1", UserAgent: ua}}}
		var out bytes.Buffer
		if err := sessionsList(t.Context(), api, &cliOptions{email: "ann@example.com"}, &out); err != nil {
			t.Fatal(err)
		}
		if i := strings.IndexFunc(out.String(), func(r rune) bool {
			return (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
		}); i >= 0 {
			t.Errorf("sessions list prints a terminal control from the user agent %q: %q", ua, out.String())
		}
	}
}
