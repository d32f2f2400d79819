package authflows

import (
	"context"
	"net/http"
	"testing"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// disablingStore disables the session's user just before the session is
// written: the interleaving of "users disable" with a sign-in that has
// already read the user (and checked the password) as enabled.
type disablingStore struct {
	storage.Store
}

func (s disablingStore) CreateSession(ctx context.Context, sess storage.Session) error {
	if _, err := s.Store.SetUserDisabled(ctx, sess.UserID, true); err != nil {
		return err
	}
	return s.Store.CreateSession(ctx, sess)
}

// AP2: a disable that lands while a sign-in is in flight wins. The sign-in
// answers 403 account_disabled and leaves no live session behind, instead
// of a session made after "disable deleted all sessions".
func TestDisableRacingSignIn(t *testing.T) {
	var inner storage.Store
	e := newTestEnv(t, func(c *Config) {
		inner = c.Store.(storage.Store)
		c.Store = disablingStore{inner}
	})
	u := e.CreateUser(t, "racer@example.com", "correct horse battery staple")
	resp := e.PostJSON("/auth/login", map[string]string{"email": "racer@example.com", "password": "correct horse battery staple"})
	if code := e.ProblemCode(t, resp, http.StatusForbidden); code != "account_disabled" {
		t.Errorf("sign-in raced by a disable: code %q, want account_disabled", code)
	}
	if c := e.SessionCookie(resp); c != nil && c.Value != "" {
		t.Errorf("a session cookie was set")
		if _, err := inner.Session(t.Context(), storage.HashSecret(c.Value)); err == nil {
			t.Errorf("and the session of the disabled user is live")
		}
	}
	got, err := inner.UserByID(t.Context(), u.ID)
	if err != nil || !got.Disabled {
		t.Fatalf("the test's disable did not happen: %+v %v", got, err)
	}
}

// The same race on an OAuth sign-in: the linked user is disabled after the
// callback read them as enabled and before the session is written.
func TestDisableRacingOAuthSignIn(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{providers: []string{"github"}, wrapStore: func(s storage.Store) storage.Store {
		return disablingStore{s}
	}})
	u := e.newUser("linked@example.com", false)
	linkIdentity(t, e.Store, storage.Identity{Provider: "github", Subject: "77", UserID: u.ID, CreatedAt: e.Clock.Now()})
	e.github.SetNext(oauthtest.Account{Subject: "77", Email: "linked@example.com", EmailVerified: true})
	b := e.newBrowser()
	if a := b.flow("/auth/login/github"); a.status != http.StatusForbidden || a.problemCode() != "account_disabled" {
		t.Errorf("OAuth sign-in raced by a disable: %d %s, want 403 account_disabled", a.status, a.body)
	}
	if _, ok := b.me(); ok {
		t.Error("the disabled user is signed in")
	}
}
