package authflows

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// storedSession reads the record of the session a cookie names.
func (e *testEnv) storedSession(t testing.TB, c *http.Cookie) storage.Session {
	t.Helper()
	s, err := e.Store.Session(t.Context(), storage.HashSecret(c.Value))
	if err != nil {
		t.Fatalf("session of the cookie: %v", err)
	}
	return s
}

// startSignIn stores a session for u as the sign-in s describes (its
// times, method, factors and groups) and returns its cookie.
func (e *testEnv) startSignIn(t testing.TB, u storage.User, s storage.Session) *http.Cookie {
	t.Helper()
	sessionID := newSecret()
	s.IDHash, s.UserID, s.Email, s.Epoch, s.LastSeen = storage.HashSecret(sessionID), u.ID, u.Email, u.Epoch, e.Clock.Now()
	if err := e.Store.CreateSession(t.Context(), s); err != nil {
		t.Fatalf("create session: %v", err)
	}
	return &http.Cookie{Name: e.Config.CookieName, Value: sessionID}
}

// README (sessions): a password change gives the browser a new session id
// but the same sign-in: its creation time, absolute expiry, groups, method
// and second factor stay those of the replaced session, and the cookie
// lives no longer than the session. No action of the user extends
// --session-ttl.
func TestPasswordChangeReissueKeepsSignIn(t *testing.T) {
	e := newTestEnv(t)
	u := e.CreateUser(t, "paula@example.com", testPassword)
	signedIn := e.Clock.Now()
	before := storage.Session{
		CreatedAt: signedIn, ExpiresAt: signedIn.Add(e.Config.SessionTTL),
		Method: methodPassword, SecondFactor: "otp", Groups: "github:corp,github:corp/ops",
	}
	cookie := e.startSignIn(t, u, before)
	e.Clock.Advance(5 * time.Minute)

	const next = "a brand new passphrase"
	resp := e.PostJSON("/auth/account/password", map[string]string{"current_password": testPassword, "password": next, "confirm": next}, cookie)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("password change: %d %s", resp.StatusCode, e.Body(t, resp))
	}
	fresh := e.SessionCookie(resp)
	if fresh == nil || fresh.Value == cookie.Value {
		t.Fatalf("password change set no new session cookie: %v", fresh)
	}
	after := e.storedSession(t, fresh)
	if !after.CreatedAt.Equal(before.CreatedAt) || !after.ExpiresAt.Equal(before.ExpiresAt) {
		t.Errorf("re-issued session: created %v, expires %v; want the replaced session's %v, %v", after.CreatedAt, after.ExpiresAt, before.CreatedAt, before.ExpiresAt)
	}
	if after.Groups != before.Groups || after.Method != before.Method || after.SecondFactor != before.SecondFactor {
		t.Errorf("re-issued session: groups %q method %q second factor %q; want %q %q %q", after.Groups, after.Method, after.SecondFactor, before.Groups, before.Method, before.SecondFactor)
	}
	if want := int(before.ExpiresAt.Sub(e.Clock.Now()) / time.Second); fresh.MaxAge > want {
		t.Errorf("re-issued cookie Max-Age %d, want at most the %d s the session has left", fresh.MaxAge, want)
	}
}

// The attack on the re-issue: with a short --session-ttl, a user who
// changes the password every few seconds never gets a fresh lifetime: the
// session (and its groups) end at the first sign-in's expiry.
func TestPasswordChangesDoNotOutliveSessionTTL(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.SessionTTL = 12 * time.Second })
	u := e.CreateUser(t, "quinn@example.com", testPassword)
	cookie := e.Login(t, "quinn@example.com", testPassword)
	current := testPassword
	for i := range 8 { // 32 s of changes, one every 4 s
		e.Clock.Advance(4 * time.Second)
		next := fmt.Sprintf("rotating passphrase number %d", i)
		resp := e.PostJSON("/auth/account/password", map[string]string{"current_password": current, "password": next, "confirm": next}, cookie)
		if resp.StatusCode != http.StatusOK {
			if e.Clock.Now().Before(u.CreatedAt.Add(12 * time.Second)) {
				t.Fatalf("change %d within the TTL: %d %s", i, resp.StatusCode, e.Body(t, resp))
			}
			break // past the TTL: refused, as it must be
		}
		cookie, current = e.SessionCookie(resp), next
	}
	if resp := e.Get("/auth/me", cookie); resp.StatusCode == http.StatusOK {
		t.Fatalf("32 s after signing in with --session-ttl 12s, password changes every 4 s kept the session: %s", e.Body(t, resp))
	}
}

// "Sign out everywhere else" keeps this browser's session as it is: the
// same id, the same expiry.
func TestSignOutOthersKeepsSession(t *testing.T) {
	e := newTestEnv(t)
	u := e.CreateUser(t, "rita@example.com", testPassword)
	cookie := e.Login(t, "rita@example.com", testPassword)
	before := e.storedSession(t, cookie)
	e.StartSession(t, u) // another browser
	e.Clock.Advance(time.Hour)
	resp := e.PostJSON("/auth/account/sessions/revoke-others", nil, cookie)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sign out others: %d %s", resp.StatusCode, e.Body(t, resp))
	}
	if c := e.SessionCookie(resp); c != nil {
		t.Errorf("sign out others set a session cookie %v; this browser's session stays", c)
	}
	after := e.storedSession(t, cookie)
	if !after.ExpiresAt.Equal(before.ExpiresAt) || !after.CreatedAt.Equal(before.CreatedAt) {
		t.Errorf("after sign out others: created %v expires %v, want %v %v", after.CreatedAt, after.ExpiresAt, before.CreatedAt, before.ExpiresAt)
	}
}
