package authflows

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// heldLookups holds every UserByEmail after it has read the user, until
// release is closed: the sign-ins have checked the old credentials and wait
// to write their session, deterministically.
type heldLookups struct {
	storage.Store
	read    sync.WaitGroup
	release chan struct{}
}

func (s *heldLookups) UserByEmail(ctx context.Context, email string) (storage.User, error) {
	u, err := s.Store.UserByEmail(ctx, email)
	s.read.Done()
	<-s.release
	return u, err
}

// Sign-ins that checked the old password while a reset
// completed get no session that outlives the reset.
func TestNoSessionOutlivesConcurrentReset(t *testing.T) {
	const signIns = 10 // the account's failure bucket holds 10 attempts in flight
	held := &heldLookups{release: make(chan struct{})}
	e := newTestEnv(t, func(c *Config) { held.Store = c.Store.(storage.Store); c.Store = held })
	u := e.CreateUser(t, "alice@example.com", oldPassword)
	resetToken := e.IssueResetToken(t, u)

	held.read.Add(signIns)
	statuses := make([]int, signIns)
	cookies := make([]*http.Cookie, signIns)
	var wg sync.WaitGroup
	for i := range signIns {
		wg.Go(func() {
			r := e.JSONRequest(http.MethodPost, "/auth/login", map[string]string{"email": "alice@example.com", "password": oldPassword})
			r.RemoteAddr = fmt.Sprintf("198.51.100.%d:4000", i+1) // one IP bucket each
			resp := e.Do(r)
			statuses[i], cookies[i] = resp.StatusCode, e.SessionCookie(resp)
		})
	}
	held.read.Wait() // every sign-in has read the user with the old hash
	resp := e.PostJSON("/auth/reset", map[string]string{"token": resetToken, "password": freshPassword})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("reset: %d %s", resp.StatusCode, e.Body(t, resp))
	}
	close(held.release)
	wg.Wait()

	for i := range signIns {
		if statuses[i] == http.StatusOK {
			t.Errorf("sign-in %d with the old password succeeded after the reset", i)
		}
		if c := cookies[i]; c != nil && c.Value != "" {
			if me := e.Get("/auth/me", c); me.StatusCode != http.StatusUnauthorized {
				t.Errorf("sign-in %d: its session still works after the reset (/auth/me %d)", i, me.StatusCode)
			}
		}
	}
	stored, err := e.Store.UserByID(t.Context(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := e.Hasher.Verify(t.Context(), stored.PasswordHash, password.Normalize(freshPassword)); !ok {
		t.Error("the reset's password no longer works: a sign-in overwrote it")
	}
}

// revokedAfterLookup revokes the user's sessions right after the OAuth
// callback has looked the user up: the revocation lands between the check
// of the identity and the session write.
type revokedAfterLookup struct{ storage.Store }

func (s revokedAfterLookup) UserByIdentity(ctx context.Context, provider, subject string) (storage.User, error) {
	u, err := s.Store.UserByIdentity(ctx, provider, subject)
	if err == nil {
		if _, err := s.Store.DeleteUserSessions(ctx, u.ID); err != nil {
			return storage.User{}, err
		}
	}
	return u, err
}

// OAuth: a sign-in whose user was revoked after the
// identity was checked gets 409 credentials_changed and no session.
func TestOAuthSignInSupersededByRevocation(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{wrapStore: func(s storage.Store) storage.Store { return revokedAfterLookup{s} }})
	u := e.newUser("bob@example.com", true)
	owner := e.newBrowser()
	owner.signIn(u)
	e.setNext("github", oauthtest.Account{Subject: "77", Email: "bob@example.com", EmailVerified: true})
	if a := owner.flow("/auth/link/github"); a.status != http.StatusSeeOther {
		t.Fatalf("link: %d %s", a.status, a.body)
	}
	b := e.newBrowser()
	a := b.flow("/auth/login/github")
	if a.status != http.StatusConflict || !strings.Contains(a.body, "credentials_changed") {
		t.Fatalf("login racing a revocation: %d %s", a.status, a.body)
	}
	if _, ok := b.me(); ok {
		t.Fatal("the browser is signed in")
	}
}
