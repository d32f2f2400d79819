package admin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
)

var now = time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)

// fixture is a Service on a fresh bolt store with its audit trail.
type fixture struct {
	store *bolt.Store
	svc   *Service
	trail *bytes.Buffer
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	store, err := bolt.Open(filepath.Join(t.TempDir(), "admin.db"), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	trail := &bytes.Buffer{}
	svc := &Service{
		Store: store,
		HashPassword: func(_ context.Context, password, email string) (string, error) {
			if len(password) < 12 {
				return "", errors.New("too short")
			}
			return "$argon2id$fake$" + fmt.Sprint(len(password)), nil
		},
		Audit: audit.New(trail, func() time.Time { return now }, nil),
		Clock: func() time.Time { return now },
	}
	return fixture{store: store, svc: svc, trail: trail}
}

// viaSocket serves api on a Unix socket and returns a Client of it.
func viaSocket(t *testing.T, api API) *Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "a.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sock, 0o600); err != nil { // as the server makes it (AD1)
		t.Fatal(err)
	}
	srv := &http.Server{Handler: NewHandler(api, nil)}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	c, err := Dial(t.Context(), sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestDialWithoutServerIsErrNoServer(t *testing.T) {
	for _, path := range []string{"", filepath.Join(t.TempDir(), "missing.sock")} {
		if _, err := Dial(t.Context(), path); !errors.Is(err, ErrNoServer) {
			t.Errorf("Dial(%q) = %v, want ErrNoServer", path, err)
		}
	}
	// A stale socket file that no process listens on.
	sock := filepath.Join(t.TempDir(), "stale.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := Dial(t.Context(), sock); !errors.Is(err, ErrNoServer) {
		t.Errorf("Dial of a stale socket = %v, want ErrNoServer", err)
	}
}

// script runs every operation on api and returns what each answered.
func script(t *testing.T, api API, store *bolt.Store) []string {
	t.Helper()
	ctx := t.Context()
	var out []string
	note := func(what string, v any, err error) {
		var e *Error
		if errors.As(err, &e) {
			out = append(out, fmt.Sprintf("%s: refused %s %q", what, e.Code, e.Message))
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		// Ids are random: replace them so both runs compare.
		out = append(out, randomID.ReplaceAllString(fmt.Sprintf("%s: %+v", what, v), "<id>"))
	}
	u, err := api.AddUser(ctx, AddUserRequest{Email: " Ann@Example.com ", Password: "a long password"})
	note("add", u, err)
	_, err = api.AddUser(ctx, AddUserRequest{Email: "ann@example.com", Password: "a long password"})
	note("add again", nil, err)
	_, err = api.AddUser(ctx, AddUserRequest{Email: "bob@example.com", Password: "short"})
	note("add weak", nil, err)
	_, err = api.AddUser(ctx, AddUserRequest{Email: "not an email", Password: "a long password"})
	note("add bad email", nil, err)
	inv, err := api.AddUser(ctx, AddUserRequest{Email: "carl@example.com", Invite: true})
	note("invite", inv, err)
	ann, _ := store.UserByEmail(ctx, "ann@example.com")
	for i := range 2 {
		if err := store.CreateSession(ctx, storage.Session{IDHash: storage.HashSecret(fmt.Sprint(api, i)), UserID: ann.ID,
			CreatedAt: now.Add(time.Duration(i) * time.Minute), LastSeen: now, ExpiresAt: now.Add(time.Hour), IP: "192.0.2.9", UserAgent: "Firefox", Method: "pwd"}); err != nil {
			t.Fatal(err)
		}
	}
	l, err := api.ListUsers(ctx)
	note("list", l, err)
	sh, err := api.ShowUser(ctx, "ANN@example.com")
	note("show", sh, err)
	ss, err := api.Sessions(ctx, "ann@example.com")
	note("sessions", ss, err)
	ch, err := api.SetDisabled(ctx, "ann@example.com", true)
	note("disable", ch, err)
	ch, err = api.SetDisabled(ctx, "ann@example.com", false)
	note("enable", ch, err)
	ch, err = api.SetPassword(ctx, "ann@example.com", "another long password")
	note("set-password", ch, err)
	ch, err = api.RevokeSessions(ctx, "ann@example.com")
	note("revoke", ch, err)
	d, err := api.DeleteUser(ctx, "carl@example.com")
	note("delete", d, err)
	_, err = api.ShowUser(ctx, "carl@example.com")
	note("show deleted", nil, err)
	_, err = api.RevokeSessions(ctx, "nobody@example.com")
	note("revoke unknown", nil, err)
	return out
}

var randomID = regexp.MustCompile(`[0-9a-f]{32}`)

// The socket gives the same answers as the service itself, and both write
// the same audit trail.
func TestClientAnswersAsTheService(t *testing.T) {
	direct := newFixture(t)
	want := script(t, direct.svc, direct.store)
	served := newFixture(t)
	got := script(t, viaSocket(t, served.svc), served.store)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("through the socket:\n%s\ndirect:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range []string{`refused email_taken "a user with email ann@example.com already exists"`,
		`refused weak_password "password refused: too short"`, `refused not_found "no user with email carl@example.com"`,
		"SessionsRevoked:2", "Disabled:true"} {
		if !strings.Contains(strings.Join(want, "\n"), s) {
			t.Errorf("script output lacks %q:\n%s", s, strings.Join(want, "\n"))
		}
	}
	trailNames := func(b *bytes.Buffer) []string {
		var names []string
		for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
			i := strings.Index(line, `"event":"`)
			names = append(names, strings.SplitN(line[i+9:], `"`, 2)[0])
		}
		return names
	}
	wantTrail := []string{"user_created", "user_created", "invite_sent", "user_disabled", "user_enabled",
		"password_changed", "sessions_revoked", "user_deleted"}
	for _, f := range []fixture{direct, served} {
		if got := trailNames(f.trail); !reflect.DeepEqual(got, wantTrail) {
			t.Errorf("audit trail %v, want %v", got, wantTrail)
		}
		if strings.Contains(f.trail.String(), "long password") || strings.Contains(f.trail.String(), "argon2") {
			t.Errorf("secret in the audit trail: %s", f.trail)
		}
	}
}

func TestSetPasswordAndDisableEndSessions(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	u, err := f.svc.AddUser(ctx, AddUserRequest{Email: "ann@example.com", Password: "a long password"})
	if err != nil {
		t.Fatal(err)
	}
	h := storage.HashSecret("s")
	add := func() {
		current, err := f.store.UserByID(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.store.CreateSession(ctx, storage.Session{IDHash: h, UserID: u.ID, ExpiresAt: now.Add(time.Hour), Epoch: current.Epoch}); err != nil {
			t.Fatal(err)
		}
	}
	for _, op := range []func() error{
		func() error { _, err := f.svc.SetPassword(ctx, u.Email, "a new long password"); return err },
		func() error { _, err := f.svc.RevokeSessions(ctx, u.Email); return err },
		func() error { _, err := f.svc.SetDisabled(ctx, u.Email, true); return err }, // last: a disabled user gets no session
	} {
		add()
		if err := op(); err != nil {
			t.Fatal(err)
		}
		if _, err := f.store.Session(ctx, h); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("session survived: %v", err)
		}
	}
	stored, _ := f.store.UserByEmail(ctx, u.Email)
	if stored.PasswordHash != "$argon2id$fake$19" || !stored.Disabled {
		t.Fatalf("stored %+v", stored)
	}
	// An invitation queues a job, never a token.
	if _, err := f.svc.AddUser(ctx, AddUserRequest{Email: "inv@example.com", Invite: true}); err != nil {
		t.Fatal(err)
	}
	due, err := f.store.DueMail(ctx, now, 10)
	if err == nil && len(due) > 0 && due[0].Kind == storage.MailKindPasswordChanged { // the set-password notice above
		due = due[1:]
	}
	if err != nil || len(due) != 1 || due[0].Kind != storage.MailKindInvite || due[0].To != "inv@example.com" {
		t.Fatalf("queue after an invitation: %+v %v", due, err)
	}
	if _, err := f.svc.AddUser(ctx, AddUserRequest{Email: "x@example.com", Invite: true, Password: "a long password"}); err == nil {
		t.Fatal("password and invite together accepted")
	}
}
