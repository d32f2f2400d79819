package authflows

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
)

// LG1 / README "No password ... is ever written to a log" and the audit
// trail's "Never a secret". The most common way a password reaches a log is
// a user (or a password manager filling the wrong input) typing it into the
// identifier field. A failed sign-in logs the email field as typed, up to 254
// bytes, with no check that it is an address at all (login.go, logEmail), so
// the password lands in both the event log and the audit file. A value that
// is not an address should not be logged verbatim (log the user id when
// known, or that the input was not an address).
func TestFailedLoginDoesNotLogAPasswordTypedAsTheEmail(t *testing.T) {
	var trail bytes.Buffer
	e := newTestEnv(t, func(c *Config) { c.Audit = audit.New(&trail, nil, nil) })
	e.CreateUser(t, "ann@example.com", testPassword)
	const typedInEmailField = "tr0ub4dor-3-horse-staple" // logged lowercased, which hides nothing
	resp := e.PostJSON("/auth/login", map[string]string{"email": typedInEmailField, "password": "ann@example.com"})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", resp.StatusCode)
	}
	if strings.Contains(strings.ToLower(e.Logs.String()), strings.ToLower(typedInEmailField)) {
		t.Errorf("the event log holds the value typed as the email, not an address (a password):\n%s", e.Logs.String())
	}
	if strings.Contains(strings.ToLower(trail.String()), strings.ToLower(typedInEmailField)) {
		t.Errorf("the audit trail holds the value typed as the email, not an address (a password):\n%s", trail.String())
	}
}
