package storagetest

import (
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// testDisable checks SetUserDisabled: the flag is kept, disabling deletes
// every session of that user (and only theirs) and bumps the epoch, in one
// call; enabling deletes nothing (AP2).
func testDisable(t *testing.T, o Opener) {
	t.Run("DisableDeletesSessionsAndBumpsEpoch", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		other := createUser(t, s, 2)
		mine := []storage.Session{
			sessionRecord("a", u.ID, time.Hour, epoch),
			sessionRecord("b", u.ID, 2*time.Hour, epoch),
		}
		theirs := sessionRecord("c", other.ID, time.Hour, epoch)
		createSessions(t, s, append(mine, theirs))

		n, err := s.SetUserDisabled(t.Context(), u.ID, true)
		wantErr(t, "SetUserDisabled(true)", err, nil)
		if n != len(mine) {
			t.Fatalf("SetUserDisabled(true) deleted %d sessions, want %d", n, len(mine))
		}
		for _, sess := range mine {
			wantSession(t, s, sess.IDHash, nil)
		}
		wantSession(t, s, theirs.IDHash, &theirs)
		got, err := s.UserByID(t.Context(), u.ID)
		wantErr(t, "UserByID", err, nil)
		want := u
		want.Disabled, want.Epoch = true, u.Epoch+1
		wantEqual(t, "disabled user", got, want)
		got, err = s.UserByEmail(t.Context(), u.Email)
		wantErr(t, "UserByEmail", err, nil)
		wantEqual(t, "disabled user by email", got, want)
		got, err = s.UserByID(t.Context(), other.ID)
		wantErr(t, "UserByID(other)", err, nil)
		wantEqual(t, "other user", got, other)
	})

	t.Run("EnableKeepsSessionsAndEpoch", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		_, err := s.SetUserDisabled(t.Context(), u.ID, true)
		wantErr(t, "SetUserDisabled(true)", err, nil)
		// A session made after enabling survives a second enable.
		n, err := s.SetUserDisabled(t.Context(), u.ID, false)
		wantErr(t, "SetUserDisabled(false)", err, nil)
		if n != 0 {
			t.Fatalf("SetUserDisabled(false) deleted %d sessions, want 0", n)
		}
		sess := sessionRecord("after", u.ID, time.Hour, epoch)
		sess.Epoch = u.Epoch + 1 // the user's, after the disable
		createSessions(t, s, []storage.Session{sess})
		n, err = s.SetUserDisabled(t.Context(), u.ID, false)
		wantErr(t, "SetUserDisabled(false) again", err, nil)
		if n != 0 {
			t.Fatalf("enable deleted %d sessions, want 0", n)
		}
		wantSession(t, s, sess.IDHash, &sess)
		got, err := s.UserByID(t.Context(), u.ID)
		wantErr(t, "UserByID", err, nil)
		want := u
		want.Epoch = u.Epoch + 1 // from the disable; enabling does not bump it
		wantEqual(t, "enabled user", got, want)
	})

	t.Run("DisableTwiceBumpsAgain", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		for range 2 {
			if _, err := s.SetUserDisabled(t.Context(), u.ID, true); err != nil {
				t.Fatalf("SetUserDisabled: %v", err)
			}
		}
		got, err := s.UserByID(t.Context(), u.ID)
		wantErr(t, "UserByID", err, nil)
		if !got.Disabled || got.Epoch != u.Epoch+2 {
			t.Fatalf("after two disables: Disabled=%t Epoch=%d, want true %d", got.Disabled, got.Epoch, u.Epoch+2)
		}
	})

	t.Run("UnknownUser", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		sess := sessionRecord("a", u.ID, time.Hour, epoch)
		createSessions(t, s, []storage.Session{sess})
		for _, disabled := range []bool{true, false} {
			n, err := s.SetUserDisabled(t.Context(), userRecord(2).ID, disabled)
			wantErr(t, "SetUserDisabled(unknown)", err, storage.ErrNotFound)
			if n != 0 {
				t.Fatalf("SetUserDisabled(unknown) reported %d sessions", n)
			}
		}
		wantSession(t, s, sess.IDHash, &sess)
		got, err := s.UserByID(t.Context(), u.ID)
		wantErr(t, "UserByID", err, nil)
		wantEqual(t, "untouched user", got, u)
	})
}
