package storagetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// testEpoch checks the credential epoch: every credential or state change
// bumps User.Epoch, and CreateSession writes a session only while its user
// exists, is enabled and is still at the session's Epoch.
func testEpoch(t *testing.T, o Opener) {
	// Each change must bump the epoch, refuse a session made at the old
	// epoch, and accept one made at the new epoch.
	changes := []struct {
		name   string
		change func(t *testing.T, s storage.Store, u storage.User)
	}{
		{"SetPasswordHash", func(t *testing.T, s storage.Store, u storage.User) {
			_, err := s.SetPasswordHash(t.Context(), u.ID, "$argon2id$changed")
			wantErr(t, "SetPasswordHash", err, nil)
		}},
		{"ChangePassword", func(t *testing.T, s storage.Store, u storage.User) {
			_, _, err := s.ChangePassword(t.Context(), u.ID, u.Epoch, "$argon2id$changed")
			wantErr(t, "ChangePassword", err, nil)
		}},
		{"DeleteUserSessions", func(t *testing.T, s storage.Store, u storage.User) {
			_, err := s.DeleteUserSessions(t.Context(), u.ID)
			wantErr(t, "DeleteUserSessions", err, nil)
		}},
		{"CompleteReset", func(t *testing.T, s storage.Store, u storage.User) {
			tok := issue(t, s, "reset", u, time.Hour)
			_, _, err := s.CompleteReset(t.Context(), tok.Hash, epoch, "$argon2id$reset", storage.Mail{})
			wantErr(t, "CompleteReset", err, nil)
		}},
	}
	for _, tc := range changes {
		t.Run("BumpedBy"+tc.name, func(t *testing.T) {
			s := o.newStore(t)
			u := createUser(t, s, 1)
			tc.change(t, s, u)
			got, err := s.UserByID(t.Context(), u.ID)
			wantErr(t, "UserByID", err, nil)
			if got.Epoch != u.Epoch+1 {
				t.Fatalf("Epoch after %s = %d, want %d", tc.name, got.Epoch, u.Epoch+1)
			}
			stale := sessionRecord("stale", u.ID, time.Hour, epoch)
			stale.Epoch = u.Epoch
			wantErr(t, "CreateSession at the old epoch", s.CreateSession(t.Context(), stale), storage.ErrCredentialsChanged)
			wantSession(t, s, stale.IDHash, nil)
			fresh := sessionRecord("fresh", u.ID, time.Hour, epoch)
			fresh.Epoch = got.Epoch
			wantErr(t, "CreateSession at the new epoch", s.CreateSession(t.Context(), fresh), nil)
			wantSession(t, s, fresh.IDHash, &fresh)
		})
	}

	// "Sign out everywhere else": the kept session stands, at the new epoch;
	// a session checked at the old one is refused.
	t.Run("DeleteOtherSessions", func(t *testing.T) {
		s := o.newStore(t)
		u, other := createUser(t, s, 1), createUser(t, s, 2)
		keep := sessionRecord("keep", u.ID, time.Hour, epoch)
		gone := []storage.Session{sessionRecord("a", u.ID, time.Hour, epoch), sessionRecord("b", u.ID, time.Hour, epoch)}
		theirs := sessionRecord("theirs", other.ID, time.Hour, epoch)
		createSessions(t, s, append(gone, keep, theirs))

		_, err := s.DeleteOtherSessions(t.Context(), u.ID, hashOf("no such session"))
		wantErr(t, "DeleteOtherSessions keeping an unknown session", err, storage.ErrNotFound)
		_, err = s.DeleteOtherSessions(t.Context(), u.ID, theirs.IDHash)
		wantErr(t, "DeleteOtherSessions keeping another user's session", err, storage.ErrNotFound)
		if got, _ := s.UserByID(t.Context(), u.ID); got.Epoch != u.Epoch {
			t.Fatalf("a refused DeleteOtherSessions moved the epoch to %d", got.Epoch)
		}
		wantSession(t, s, gone[0].IDHash, &gone[0])

		n, err := s.DeleteOtherSessions(t.Context(), u.ID, keep.IDHash)
		wantErr(t, "DeleteOtherSessions", err, nil)
		if n != len(gone) {
			t.Errorf("DeleteOtherSessions reported %d, want %d", n, len(gone))
		}
		for _, sess := range gone {
			wantSession(t, s, sess.IDHash, nil)
		}
		wantSession(t, s, theirs.IDHash, &theirs)
		got, err := s.UserByID(t.Context(), u.ID)
		wantErr(t, "UserByID", err, nil)
		if got.Epoch != u.Epoch+1 {
			t.Fatalf("Epoch after DeleteOtherSessions = %d, want %d", got.Epoch, u.Epoch+1)
		}
		keep.Epoch = got.Epoch
		wantSession(t, s, keep.IDHash, &keep)
		stale := sessionRecord("stale", u.ID, time.Hour, epoch)
		stale.Epoch = u.Epoch
		wantErr(t, "CreateSession at the old epoch", s.CreateSession(t.Context(), stale), storage.ErrCredentialsChanged)
	})

	t.Run("CreateSessionRefusesUnknownOrDisabledUser", func(t *testing.T) {
		s := o.newStore(t)
		disabled := userRecord(2)
		disabled.Disabled = true
		wantErr(t, "CreateUser(disabled)", s.CreateUser(t.Context(), disabled), nil)
		for _, uid := range []string{userRecord(1).ID, disabled.ID} {
			sess := sessionRecord("of "+uid, uid, time.Hour, epoch)
			wantErr(t, "CreateSession of "+uid, s.CreateSession(t.Context(), sess), storage.ErrCredentialsChanged)
			wantSession(t, s, sess.IDHash, nil)
			wantDeleteUserSessions(t, s, uid, 0) // no index entry either
		}
	})

	t.Run("UpgradePasswordHash", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		err := s.UpgradePasswordHash(t.Context(), u.ID, "$argon2id$not-the-stored-one", "$argon2id$upgraded")
		wantErr(t, "UpgradePasswordHash from a stale hash", err, storage.ErrCredentialsChanged)
		got, err := s.UserByID(t.Context(), u.ID)
		wantErr(t, "UserByID", err, nil)
		wantEqual(t, "user after a refused upgrade", got, u)

		wantErr(t, "UpgradePasswordHash", s.UpgradePasswordHash(t.Context(), u.ID, u.PasswordHash, "$argon2id$upgraded"), nil)
		got, err = s.UserByID(t.Context(), u.ID)
		wantErr(t, "UserByID", err, nil)
		u.PasswordHash = "$argon2id$upgraded" // same password: the epoch stays
		wantEqual(t, "user after the upgrade", got, u)

		err = s.UpgradePasswordHash(t.Context(), userRecord(9).ID, "", "$argon2id$x")
		wantErr(t, "UpgradePasswordHash of an unknown user", err, storage.ErrNotFound)
	})

	t.Run("UpgradeNeverOverwritesReset", func(t *testing.T) {
		// A sign-in verified the old hash; a reset then replaced it. The
		// sign-in's upgrade must leave the reset's hash in place.
		s := o.newStore(t)
		u := createUser(t, s, 1)
		tok := issue(t, s, "reset", u, time.Hour)
		_, _, err := s.CompleteReset(t.Context(), tok.Hash, epoch, "$argon2id$reset", storage.Mail{})
		wantErr(t, "CompleteReset", err, nil)
		err = s.UpgradePasswordHash(t.Context(), u.ID, u.PasswordHash, "$argon2id$old-password-rehashed")
		wantErr(t, "UpgradePasswordHash after the reset", err, storage.ErrCredentialsChanged)
		got, err := s.UserByID(t.Context(), u.ID)
		wantErr(t, "UserByID", err, nil)
		if got.PasswordHash != "$argon2id$reset" {
			t.Fatalf("hash after the upgrade = %q, want the reset's", got.PasswordHash)
		}
	})

	t.Run("NoSessionOutlivesConcurrentReset", func(t *testing.T) {
		// Sign-ins that read the user before the reset race it: whichever
		// order the store runs them in, none of their sessions survives.
		s := o.newStore(t)
		u := createUser(t, s, 1)
		tok := issue(t, s, "reset", u, time.Hour)
		const signIns = 40
		created := make([]bool, signIns)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range signIns {
			wg.Go(func() {
				<-start
				sess := sessionRecord(fmt.Sprint("racing ", i), u.ID, time.Hour, epoch)
				sess.Epoch = u.Epoch // read before the reset
				err := s.CreateSession(t.Context(), sess)
				if err != nil && !errors.Is(err, storage.ErrCredentialsChanged) {
					t.Errorf("CreateSession %d: %v", i, err)
				}
				created[i] = err == nil
			})
		}
		wg.Go(func() {
			<-start
			_, _, err := s.CompleteReset(t.Context(), tok.Hash, epoch, "$argon2id$reset", storage.Mail{})
			wantErr(t, "CompleteReset", err, nil)
		})
		close(start)
		wg.Wait()
		for i := range signIns {
			wantSession(t, s, hashOf("session racing %d", i), nil)
		}
		wantDeleteUserSessions(t, s, u.ID, 0)
	})
}
