package storagetest

import (
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// testPasswords: every way a password is replaced (an administrator's
// SetPasswordHash, the user's ChangePassword, a CompleteReset) ends the
// user's sessions and voids the user's reset tokens in the same
// transaction (CR1, RS3); the user's own change, and a link, happen only
// while nothing has changed the user's credentials since they were checked;
// a disabled user's reset and invitation tokens are void for good.
func testPasswords(t *testing.T, o Opener) {
	replacers := []struct {
		name    string
		replace func(t *testing.T, s storage.Store, u storage.User) int
	}{
		{"SetPasswordHash", func(t *testing.T, s storage.Store, u storage.User) int {
			n, err := s.SetPasswordHash(t.Context(), u.ID, "$argon2id$replaced")
			wantErr(t, "SetPasswordHash", err, nil)
			return n
		}},
		{"ChangePassword", func(t *testing.T, s storage.Store, u storage.User) int {
			got, n, err := s.ChangePassword(t.Context(), u.ID, u.Epoch, "$argon2id$replaced")
			wantErr(t, "ChangePassword", err, nil)
			want := u
			want.PasswordHash, want.Epoch = "$argon2id$replaced", u.Epoch+1
			wantEqual(t, "the user ChangePassword returns", got, want)
			return n
		}},
		{"CompleteReset", func(t *testing.T, s storage.Store, u storage.User) int {
			tok := issue(t, s, "the reset itself", u, time.Hour)
			_, n, err := s.CompleteReset(t.Context(), tok.Hash, epoch, "$argon2id$replaced", storage.Mail{})
			wantErr(t, "CompleteReset", err, nil)
			return n
		}},
	}
	for _, tc := range replacers {
		t.Run("ReplacedBy"+tc.name, func(t *testing.T) {
			s := o.newStore(t)
			u, other := createUser(t, s, 1), createUser(t, s, 2)
			mine := []storage.Session{sessionRecord("a", u.ID, time.Hour, epoch), sessionRecord("b", u.ID, time.Hour, epoch)}
			theirs := sessionRecord("c", other.ID, time.Hour, epoch)
			createSessions(t, s, append(mine, theirs))
			// A waiting link, and a token of the other user: only the first goes.
			waiting := issue(t, s, "waiting", u, time.Hour)
			kept := issue(t, s, "kept", other, time.Hour)

			if n := tc.replace(t, s, u); n != len(mine) {
				t.Errorf("%s reported %d sessions deleted, want %d", tc.name, n, len(mine))
			}
			got, err := s.UserByID(t.Context(), u.ID)
			wantErr(t, "UserByID", err, nil)
			if got.PasswordHash != "$argon2id$replaced" || got.Epoch != u.Epoch+1 {
				t.Errorf("after %s: hash %q epoch %d, want the new hash at epoch %d", tc.name, got.PasswordHash, got.Epoch, u.Epoch+1)
			}
			for _, sess := range mine {
				wantSession(t, s, sess.IDHash, nil)
			}
			wantSession(t, s, theirs.IDHash, &theirs)
			wantTokenUser(t, s, waiting.Hash, epoch, "")
			wantTokenUser(t, s, kept.Hash, epoch, other.ID)
		})
	}

	// The user's own change checked the old password at some epoch: a reset,
	// a revocation or a disable since then wins, and the change writes nothing.
	t.Run("ChangePasswordRefusedAfterACredentialChange", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			before func(t *testing.T, s storage.Store, u storage.User)
		}{
			{"reset", func(t *testing.T, s storage.Store, u storage.User) {
				tok := issue(t, s, "owner's", u, time.Hour)
				_, _, err := s.CompleteReset(t.Context(), tok.Hash, epoch, "$argon2id$owner", storage.Mail{})
				wantErr(t, "CompleteReset", err, nil)
			}},
			{"revoke", func(t *testing.T, s storage.Store, u storage.User) {
				_, err := s.DeleteUserSessions(t.Context(), u.ID)
				wantErr(t, "DeleteUserSessions", err, nil)
			}},
			{"disable", func(t *testing.T, s storage.Store, u storage.User) {
				_, err := s.SetUserDisabled(t.Context(), u.ID, true)
				wantErr(t, "SetUserDisabled", err, nil)
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := o.newStore(t)
				u := createUser(t, s, 1)
				tc.before(t, s, u)
				before, err := s.UserByID(t.Context(), u.ID)
				wantErr(t, "UserByID", err, nil)
				_, _, err = s.ChangePassword(t.Context(), u.ID, u.Epoch, "$argon2id$intruder")
				wantErr(t, "ChangePassword at the epoch before the "+tc.name, err, storage.ErrCredentialsChanged)
				after, err := s.UserByID(t.Context(), u.ID)
				wantErr(t, "UserByID", err, nil)
				wantEqual(t, "user after the refused change", after, before)
			})
		}
		s := o.newStore(t)
		_, _, err := s.ChangePassword(t.Context(), userRecord(9).ID, 0, "$argon2id$x")
		wantErr(t, "ChangePassword of an unknown user", err, storage.ErrNotFound)
	})

	// A link is made for the session that asked for it, only while that
	// session stands (OA7).
	t.Run("LinkNeedsItsSession", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			before func(t *testing.T, s storage.Store, u, other storage.User, sess storage.Session) storage.Hash
		}{
			{"signed out", func(t *testing.T, s storage.Store, u, other storage.User, sess storage.Session) storage.Hash {
				wantErr(t, "DeleteSession", s.DeleteSession(t.Context(), sess.IDHash), nil)
				return sess.IDHash
			}},
			{"revoked", func(t *testing.T, s storage.Store, u, other storage.User, sess storage.Session) storage.Hash {
				_, err := s.DeleteUserSessions(t.Context(), u.ID)
				wantErr(t, "DeleteUserSessions", err, nil)
				return sess.IDHash
			}},
			{"disabled", func(t *testing.T, s storage.Store, u, other storage.User, sess storage.Session) storage.Hash {
				_, err := s.SetUserDisabled(t.Context(), u.ID, true)
				wantErr(t, "SetUserDisabled", err, nil)
				return sess.IDHash
			}},
			{"another user's session", func(t *testing.T, s storage.Store, u, other storage.User, sess storage.Session) storage.Hash {
				theirs := sessionRecord("theirs", other.ID, time.Hour, epoch)
				createSessions(t, s, []storage.Session{theirs})
				return theirs.IDHash
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := o.newStore(t)
				u, other := createUser(t, s, 1), createUser(t, s, 2)
				sess := sessionRecord("linking", u.ID, time.Hour, epoch)
				createSessions(t, s, []storage.Session{sess})
				h := tc.before(t, s, u, other, sess)
				err := s.LinkIdentity(t.Context(), identityRecord("github", "666", u.ID), h)
				wantErr(t, "LinkIdentity", err, storage.ErrCredentialsChanged)
				wantLinked(t, s, "github", "666", "")
			})
		}
	})

	// A disabled user's reset and invitation tokens are void, and stay void
	// once the user is enabled again: the mail may be in someone else's hands.
	t.Run("DisableVoidsTokens", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		reset := issue(t, s, "before the disable", u, time.Hour)
		invited := createInvitedUser(t, s, 2)
		invite := inviteRecord("before the disable", invited.ID, time.Hour)
		wantErr(t, "IssueInviteToken", s.IssueInviteToken(t.Context(), invite), nil)
		for _, id := range []string{u.ID, invited.ID} {
			_, err := s.SetUserDisabled(t.Context(), id, true)
			wantErr(t, "SetUserDisabled", err, nil)
		}
		wantTokenUser(t, s, reset.Hash, epoch, "")
		_, _, err := s.CompleteReset(t.Context(), reset.Hash, epoch, "$argon2id$intruder", storage.Mail{})
		wantErr(t, "CompleteReset of a disabled user", err, storage.ErrNotFound)
		for _, id := range []string{u.ID, invited.ID} {
			_, err := s.SetUserDisabled(t.Context(), id, false)
			wantErr(t, "SetUserDisabled(false)", err, nil)
		}
		wantTokenUser(t, s, reset.Hash, epoch, "")
		_, _, err = s.CompleteReset(t.Context(), reset.Hash, epoch, "$argon2id$intruder", storage.Mail{})
		wantErr(t, "CompleteReset after the enable", err, storage.ErrNotFound)
		_, err = s.InviteTokenUser(t.Context(), invite.Hash, epoch)
		wantErr(t, "InviteTokenUser after disable and enable", err, storage.ErrNotFound)
		_, err = s.CompleteInvite(t.Context(), invite.Hash, epoch, "$argon2id$intruder")
		wantErr(t, "CompleteInvite after disable and enable", err, storage.ErrNotFound)
		if got, _ := s.UserByID(t.Context(), u.ID); got.PasswordHash != u.PasswordHash {
			t.Errorf("the password changed through a voided token")
		}
	})

	// No token is minted for a disabled user (a reset or invitation job
	// delivered after the disable), nor an invitation for a user with a
	// password: nothing is written, and the mail queue drops the job.
	t.Run("NoTokenForADisabledUser", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		invited := createInvitedUser(t, s, 2)
		for _, id := range []string{u.ID, invited.ID} {
			_, err := s.SetUserDisabled(t.Context(), id, true)
			wantErr(t, "SetUserDisabled", err, nil)
		}
		tok := tokenRecord("while disabled", u.ID, time.Hour)
		wantErr(t, "IssueResetToken of a disabled user", s.IssueResetToken(t.Context(), tok), storage.ErrNotFound)
		wantTokenUser(t, s, tok.Hash, epoch, "")
		invite := inviteRecord("while disabled", invited.ID, time.Hour)
		wantErr(t, "IssueInviteToken of a disabled user", s.IssueInviteToken(t.Context(), invite), storage.ErrNotFound)
		for _, id := range []string{u.ID, invited.ID} {
			_, err := s.SetUserDisabled(t.Context(), id, false)
			wantErr(t, "SetUserDisabled(false)", err, nil)
		}
		wantTokenUser(t, s, tok.Hash, epoch, "")
		_, err := s.InviteTokenUser(t.Context(), invite.Hash, epoch)
		wantErr(t, "InviteTokenUser after the enable", err, storage.ErrNotFound)
		withPassword := inviteRecord("for a user with a password", u.ID, time.Hour)
		wantErr(t, "IssueInviteToken of a user with a password", s.IssueInviteToken(t.Context(), withPassword), storage.ErrNotFound)
	})
}
