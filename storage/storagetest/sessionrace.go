package storagetest

import (
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// testSessionRefused checks that CreateSession refuses, writing nothing,
// a session for a disabled user or one made under an older credential
// epoch than the user's: a disable that lands while a sign-in is between
// its checks and its session write must not leave a live session (AP2).
func testSessionRefused(t *testing.T, o Opener) {
	t.Run("CreateSessionRefusedForDisabledUser", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		_, err := s.SetUserDisabled(t.Context(), u.ID, true)
		wantErr(t, "SetUserDisabled(true)", err, nil)
		sess := sessionRecord("late", u.ID, time.Hour, epoch)
		sess.Epoch = u.Epoch + 1 // even at the current epoch
		wantErr(t, "CreateSession(disabled user)", s.CreateSession(t.Context(), sess), storage.ErrCredentialsChanged)
		wantSession(t, s, sess.IDHash, nil)
	})
	t.Run("CreateSessionRefusedUnderOldEpoch", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		_, err := s.SetUserDisabled(t.Context(), u.ID, true)
		wantErr(t, "SetUserDisabled(true)", err, nil)
		_, err = s.SetUserDisabled(t.Context(), u.ID, false)
		wantErr(t, "SetUserDisabled(false)", err, nil)
		stale := sessionRecord("stale", u.ID, time.Hour, epoch)
		stale.Epoch = u.Epoch // read before the disable
		wantErr(t, "CreateSession(old epoch)", s.CreateSession(t.Context(), stale), storage.ErrCredentialsChanged)
		wantSession(t, s, stale.IDHash, nil)
		current := sessionRecord("current", u.ID, time.Hour, epoch)
		current.Epoch = u.Epoch + 1
		wantErr(t, "CreateSession(current epoch)", s.CreateSession(t.Context(), current), nil)
		wantSession(t, s, current.IDHash, &current)
	})
}
