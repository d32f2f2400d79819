// Package storagetest is the conformance suite of storage.Store: the same
// semantics tests, run against every backend.
//
// Dependencies: storagetest imports storage and the standard library only. A
// backend's own tests call Run with a function that opens a fresh, empty
// store:
//
//	func TestConformance(t *testing.T) {
//		storagetest.Run(t, func(t *testing.T) storage.Store { ... })
//	}
//
// The suite closes every store it opens. Times are compared with
// time.Time.Equal and use microsecond precision, so a backend may store
// them as microseconds (PostgreSQL timestamptz) or finer.
package storagetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// Opener returns a fresh, empty store for one test.
type Opener func(t *testing.T) storage.Store

// Run runs the conformance suite against the backend that open creates.
func Run(t *testing.T, open func(t *testing.T) storage.Store) {
	o := Opener(open)
	t.Run("Users", func(t *testing.T) { testUsers(t, o) })
	t.Run("Disable", func(t *testing.T) { testDisable(t, o) })
	t.Run("SessionRefused", func(t *testing.T) { testSessionRefused(t, o) })
	t.Run("Identities", func(t *testing.T) { testIdentities(t, o) })
	t.Run("Sessions", func(t *testing.T) { testSessions(t, o) })
	t.Run("SessionSweep", func(t *testing.T) { testSessionSweep(t, o) })
	t.Run("SessionReads", func(t *testing.T) { testSessionReads(t, o) })
	t.Run("Reset", func(t *testing.T) { testReset(t, o) })
	t.Run("Epoch", func(t *testing.T) { testEpoch(t, o) })
	t.Run("Passwords", func(t *testing.T) { testPasswords(t, o) })
	t.Run("ResetRequest", func(t *testing.T) { testResetRequest(t, o) })
	t.Run("OAuth", func(t *testing.T) { testOAuth(t, o) })
	t.Run("Mail", func(t *testing.T) { testMail(t, o) })
	t.Run("SigningKeys", func(t *testing.T) { testSigningKeys(t, o) })
	t.Run("Admin", func(t *testing.T) { testAdmin(t, o) })
	t.Run("Invites", func(t *testing.T) { testInvites(t, o) })
	t.Run("Secrets", func(t *testing.T) { testSecrets(t, o) })
	t.Run("Factors", func(t *testing.T) { testFactors(t, o) })
	t.Run("FactorSteps", func(t *testing.T) { testFactorSteps(t, o) })
	t.Run("APITokens", func(t *testing.T) { testAPITokens(t, o) })
	t.Run("Grants", func(t *testing.T) { testGrants(t, o) })
	t.Run("PingClose", func(t *testing.T) { testPingClose(t, o) })
}

// newStore opens a store and closes it when the test ends.
func (o Opener) newStore(t *testing.T) storage.Store {
	t.Helper()
	s := o(t)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// epoch is the suite's "now": a fixed instant with microseconds, in UTC.
var epoch = time.Date(2031, time.March, 4, 5, 6, 7, 891011000, time.UTC)

func at(d time.Duration) time.Time { return epoch.Add(d) }

// sessionImporter is the optional bulk loader of a backend; the suite uses it
// to populate large stores quickly and falls back to CreateSession.
type sessionImporter interface {
	ImportSessions(ctx context.Context, sessions []storage.Session) error
}

// withUser creates the user of sess (id sess.UserID, at epoch 0) unless it
// exists, and returns sess: CreateSession refuses a session without its user.
func withUser(t *testing.T, s storage.Store, sess storage.Session) storage.Session {
	t.Helper()
	_, err := s.UserByID(t.Context(), sess.UserID)
	if errors.Is(err, storage.ErrNotFound) {
		err = s.CreateUser(t.Context(), storage.User{ID: sess.UserID, Email: sess.UserID + "@users.example.com", CreatedAt: epoch})
	}
	if err != nil {
		t.Fatalf("user %s of a session: %v", sess.UserID, err)
	}
	return sess
}

func createSessions(t *testing.T, s storage.Store, sessions []storage.Session) {
	t.Helper()
	for _, sess := range sessions {
		withUser(t, s, sess)
	}
	if imp, ok := s.(sessionImporter); ok && len(sessions) > 100 {
		if err := imp.ImportSessions(t.Context(), sessions); err != nil {
			t.Fatalf("ImportSessions(%d): %v", len(sessions), err)
		}
		return
	}
	for _, sess := range sessions {
		if err := s.CreateSession(t.Context(), sess); err != nil {
			t.Fatalf("CreateSession: %v", err)
		}
	}
}

// userRecord returns user n: a 32-hex-character id and its email.
func userRecord(n int) storage.User {
	return storage.User{
		ID:           fmt.Sprintf("%032x", 0xa0000+n),
		Email:        fmt.Sprintf("user%d@example.com", n),
		PasswordHash: fmt.Sprintf("$argon2id$v=19$m=19456,t=2,p=1$salt%d$hash%d", n, n),
		CreatedAt:    at(-time.Duration(n) * time.Hour),
	}
}

// createUser stores user n and returns it.
func createUser(t *testing.T, s storage.Store, n int) storage.User {
	t.Helper()
	u := userRecord(n)
	if err := s.CreateUser(t.Context(), u); err != nil {
		t.Fatalf("CreateUser(%s): %v", u.Email, err)
	}
	return u
}

// hashOf names a secret of the suite.
func hashOf(format string, args ...any) storage.Hash {
	return storage.HashSecret(fmt.Sprintf(format, args...))
}

// sessionRecord returns a session of user that expires after d and was last seen at lastSeen.
func sessionRecord(name string, userID string, expires time.Duration, lastSeen time.Time) storage.Session {
	return storage.Session{
		IDHash:    hashOf("session %s", name),
		UserID:    userID,
		Email:     "owner-of-" + name + "@example.com",
		CreatedAt: at(-2 * time.Hour),
		ExpiresAt: at(expires),
		LastSeen:  lastSeen,
	}
}

// wantErr fails unless err matches want (nil: no error).
func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("%s: unexpected error %v", what, err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("%s: error %v, want %v", what, err, want)
	}
}

// wantEqual fails unless got and want have equal fields, times compared with Equal.
func wantEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	if d := diff(reflect.ValueOf(got), reflect.ValueOf(want), ""); d != "" {
		t.Fatalf("%s: %s\n got %+v\nwant %+v", what, d, got, want)
	}
}

var timeType = reflect.TypeFor[time.Time]()

// diff describes the first difference between a and b, or returns "".
func diff(a, b reflect.Value, path string) string {
	switch {
	case a.Type() != b.Type():
		return fmt.Sprintf("%s: type %s, want %s", path, a.Type(), b.Type())
	case a.Type() == timeType:
		if ta, tb := a.Interface().(time.Time), b.Interface().(time.Time); !ta.Equal(tb) {
			return fmt.Sprintf("%s: %v, want %v", path, ta, tb)
		}
	case a.Kind() == reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Sprintf("%s: %v, want %v", path, a.Interface(), b.Interface())
			}
			return ""
		}
		return diff(a.Elem(), b.Elem(), path)
	case a.Kind() == reflect.Struct:
		for i := range a.NumField() {
			if d := diff(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); d != "" {
				return d
			}
		}
	case a.Kind() == reflect.Slice:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: length %d, want %d", path, a.Len(), b.Len())
		}
		for i := range a.Len() {
			if d := diff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
	case !reflect.DeepEqual(a.Interface(), b.Interface()):
		return fmt.Sprintf("%s: %v, want %v", path, a.Interface(), b.Interface())
	}
	return ""
}

func testPingClose(t *testing.T, o Opener) {
	s := o.newStore(t)
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping of an open store: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Ping(t.Context()); err == nil {
		t.Fatal("Ping of a closed store: no error, want one (readiness must fail)")
	}
}
