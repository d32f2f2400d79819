package admin

import (
	"encoding/json"
	"strings"
	"testing"
)

// AD1: every admin change is an audit event naming its target, by user id
// and email.
func TestEveryAdminEventNamesItsTarget(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	ann, err := f.svc.AddUser(ctx, AddUserRequest{Email: "ann@example.com", Password: "a long password"})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := f.svc.AddUser(ctx, AddUserRequest{Email: "bob@example.com", Invite: true})
	if err != nil {
		t.Fatal(err)
	}
	steps := []func() error{
		func() error { _, err := f.svc.SetDisabled(ctx, "ann@example.com", true); return err },
		func() error { _, err := f.svc.SetDisabled(ctx, "ann@example.com", false); return err },
		func() error { _, err := f.svc.SetPassword(ctx, "ann@example.com", "another long password"); return err },
		func() error { _, err := f.svc.RevokeSessions(ctx, "ann@example.com"); return err },
		func() error { _, err := f.svc.DeleteUser(ctx, "bob@example.com"); return err },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	target := map[string]string{ann.Email: ann.ID, bob.Email: bob.ID}
	lines := strings.Split(strings.TrimSpace(f.trail.String()), "\n")
	if len(lines) != 2+1+len(steps) { // two user_created, invite_sent, the steps
		t.Fatalf("%d audit events, want %d:\n%s", len(lines), 3+len(steps), f.trail)
	}
	for _, line := range lines {
		var ev struct {
			Event, Email string
			UserID       string `json:"user_id"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if ev.Email == "" || target[ev.Email] != ev.UserID {
			t.Errorf("%s does not name its target: %s", ev.Event, line)
		}
	}
}
