package storagetest

import (
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

func testAdmin(t *testing.T, o Opener) {
	t.Run("DisableDeletesSessionsEnableKeepsThemGone", func(t *testing.T) {
		s := o.newStore(t)
		u, other := createUser(t, s, 1), createUser(t, s, 2)
		createSessions(t, s, []storage.Session{
			sessionRecord("a", u.ID, time.Hour, epoch), sessionRecord("b", u.ID, time.Hour, epoch),
			sessionRecord("c", other.ID, time.Hour, epoch),
		})
		n, err := s.SetUserDisabled(t.Context(), u.ID, true)
		wantErr(t, "SetUserDisabled(true)", err, nil)
		if n != 2 {
			t.Fatalf("SetUserDisabled(true) deleted %d sessions, want 2", n)
		}
		got, err := s.UserByID(t.Context(), u.ID)
		wantErr(t, "UserByID", err, nil)
		if !got.Disabled {
			t.Fatal("user not disabled after SetUserDisabled(true)")
		}
		for _, name := range []string{"a", "b"} {
			_, err := s.Session(t.Context(), hashOf("session %s", name))
			wantErr(t, "Session of a disabled user", err, storage.ErrNotFound)
		}
		if _, err := s.Session(t.Context(), hashOf("session c")); err != nil {
			t.Fatalf("another user's session is gone: %v", err)
		}
		// A disabled user gets no new session either (CR1).
		d := sessionRecord("d", u.ID, time.Hour, epoch)
		d.Epoch = got.Epoch
		wantErr(t, "CreateSession of a disabled user", s.CreateSession(t.Context(), d), storage.ErrCredentialsChanged)
		n, err = s.SetUserDisabled(t.Context(), u.ID, false)
		wantErr(t, "SetUserDisabled(false)", err, nil)
		if n != 0 {
			t.Fatalf("SetUserDisabled(false) deleted %d sessions, want 0", n)
		}
		if got, _ := s.UserByID(t.Context(), u.ID); got.Disabled {
			t.Fatal("user still disabled after SetUserDisabled(false)")
		}
		// A session made once enabled (at the user's epoch, bumped by the
		// disable) survives another enable.
		d = sessionRecord("e", u.ID, time.Hour, epoch)
		d.Epoch = u.Epoch + 1
		createSessions(t, s, []storage.Session{d})
		n, err = s.SetUserDisabled(t.Context(), u.ID, false)
		wantErr(t, "SetUserDisabled(false) again", err, nil)
		if n != 0 {
			t.Fatalf("SetUserDisabled(false) again deleted %d sessions, want 0", n)
		}
		wantSession(t, s, d.IDHash, &d)
		_, err = s.SetUserDisabled(t.Context(), "ffffffffffffffffffffffffffffffff", true)
		wantErr(t, "SetUserDisabled of an unknown user", err, storage.ErrNotFound)
	})

	t.Run("DeleteUserTakesEverythingOfTheUser", func(t *testing.T) {
		s := o.newStore(t)
		u, other := createInvitedUser(t, s, 1), createUser(t, s, 2)
		wantErr(t, "LinkIdentity", link(t, s, storage.Identity{Provider: "github", Subject: "42", UserID: u.ID, CreatedAt: epoch}), nil)
		wantErr(t, "LinkIdentity other", link(t, s, storage.Identity{Provider: "github", Subject: "43", UserID: other.ID, CreatedAt: epoch}), nil)
		createSessions(t, s, []storage.Session{sessionRecord("mine", u.ID, time.Hour, epoch), sessionRecord("theirs", other.ID, time.Hour, epoch)})
		wantErr(t, "QueueResetMail", s.QueueResetMail(t.Context(), u.ID, epoch), nil)
		wantErr(t, "QueueResetMail other", s.QueueResetMail(t.Context(), other.ID, epoch), nil)
		mine := issue(t, s, "mine", u, time.Hour)
		theirs := issue(t, s, "theirs", other, time.Hour)
		invite := inviteRecord("mine", u.ID, time.Hour)
		wantErr(t, "IssueInviteToken", s.IssueInviteToken(t.Context(), invite), nil)
		if _, err := s.InviteTokenUser(t.Context(), invite.Hash, epoch); err != nil {
			t.Fatalf("InviteTokenUser before delete: %v", err)
		}
		if _, err := s.EnqueueMail(t.Context(), storage.Mail{To: u.Email, Subject: "s", Text: "t", CreatedAt: epoch, NextAttempt: epoch}); err != nil {
			t.Fatal(err)
		}

		wantErr(t, "DeleteUser", s.DeleteUser(t.Context(), u.ID), nil)

		_, err := s.UserByID(t.Context(), u.ID)
		wantErr(t, "UserByID after delete", err, storage.ErrNotFound)
		_, err = s.UserByEmail(t.Context(), u.Email)
		wantErr(t, "UserByEmail after delete", err, storage.ErrNotFound)
		_, err = s.UserByIdentity(t.Context(), "github", "42")
		wantErr(t, "UserByIdentity after delete", err, storage.ErrNotFound)
		_, err = s.Session(t.Context(), hashOf("session mine"))
		wantErr(t, "Session after delete", err, storage.ErrNotFound)
		wantTokenUser(t, s, mine.Hash, epoch, "")
		_, err = s.InviteTokenUser(t.Context(), invite.Hash, epoch)
		wantErr(t, "InviteTokenUser after delete", err, storage.ErrNotFound)
		if ss, err := s.SessionsOfUser(t.Context(), u.ID); err != nil || len(ss) != 0 {
			t.Fatalf("SessionsOfUser after delete = %d, %v; want none", len(ss), err)
		}
		mail := allMail(t, s)
		if len(mail) != 1 || mail[0].UserID != other.ID {
			t.Fatalf("queue after delete = %+v, want only the other user's job", mail)
		}

		// The other user kept everything.
		if got, err := s.UserByIdentity(t.Context(), "github", "43"); err != nil || got.ID != other.ID {
			t.Fatalf("other user's identity: %v %v", got.ID, err)
		}
		if _, err := s.Session(t.Context(), hashOf("session theirs")); err != nil {
			t.Fatalf("other user's session: %v", err)
		}
		wantTokenUser(t, s, theirs.Hash, epoch, other.ID)

		// Email and identity are free again.
		again := userRecord(3)
		again.Email = u.Email
		wantErr(t, "CreateUser with a deleted user's email", s.CreateUser(t.Context(), again), nil)
		wantErr(t, "LinkIdentity of a deleted user's identity", link(t, s, storage.Identity{Provider: "github", Subject: "42", UserID: again.ID, CreatedAt: epoch}), nil)

		wantErr(t, "DeleteUser again", s.DeleteUser(t.Context(), u.ID), storage.ErrNotFound)
	})

	t.Run("SessionsOfUserNewestFirst", func(t *testing.T) {
		s := o.newStore(t)
		u, other := createUser(t, s, 1), createUser(t, s, 2)
		old := sessionRecord("old", u.ID, time.Hour, epoch)
		old.CreatedAt = at(-3 * time.Hour)
		recent := sessionRecord("recent", u.ID, time.Hour, epoch)
		recent.CreatedAt = at(-time.Minute)
		recent.IP, recent.UserAgent, recent.Method = "192.0.2.7", "Mozilla/5.0 test", "pwd"
		createSessions(t, s, []storage.Session{old, recent, sessionRecord("theirs", other.ID, time.Hour, epoch)})
		got, err := s.SessionsOfUser(t.Context(), u.ID)
		wantErr(t, "SessionsOfUser", err, nil)
		wantEqual(t, "SessionsOfUser", got, []storage.Session{recent, old})
		got, err = s.SessionsOfUser(t.Context(), "ffffffffffffffffffffffffffffffff")
		wantErr(t, "SessionsOfUser of an unknown user", err, nil)
		if len(got) != 0 {
			t.Fatalf("SessionsOfUser of an unknown user = %d sessions", len(got))
		}
	})
}

func inviteRecord(name, userID string, ttl time.Duration) storage.ResetToken {
	return storage.ResetToken{
		Hash:      hashOf("invite token %s", name),
		UserID:    userID,
		CreatedAt: at(-time.Minute),
		ExpiresAt: at(ttl),
	}
}

// createInvitedUser stores user n without a password, as `users add
// --invite` does.
func createInvitedUser(t *testing.T, s storage.Store, n int) storage.User {
	t.Helper()
	u := userRecord(n)
	u.PasswordHash = ""
	if err := s.CreateUser(t.Context(), u); err != nil {
		t.Fatalf("CreateUser(%s): %v", u.Email, err)
	}
	return u
}

func testInvites(t *testing.T, o Opener) {
	t.Run("CompleteOnceSetsPassword", func(t *testing.T) {
		s := o.newStore(t)
		u := userRecord(1)
		u.PasswordHash = ""
		wantErr(t, "CreateUser", s.CreateUser(t.Context(), u), nil)
		tok := inviteRecord("a", u.ID, time.Hour)
		wantErr(t, "IssueInviteToken", s.IssueInviteToken(t.Context(), tok), nil)
		got, err := s.InviteTokenUser(t.Context(), tok.Hash, epoch)
		wantErr(t, "InviteTokenUser", err, nil)
		if got.ID != u.ID {
			t.Fatalf("InviteTokenUser = %s, want %s", got.ID, u.ID)
		}
		got, err = s.CompleteInvite(t.Context(), tok.Hash, epoch, "$argon2id$new")
		wantErr(t, "CompleteInvite", err, nil)
		if got.PasswordHash != "$argon2id$new" {
			t.Fatalf("CompleteInvite returned hash %q", got.PasswordHash)
		}
		if stored, _ := s.UserByID(t.Context(), u.ID); stored.PasswordHash != "$argon2id$new" {
			t.Fatalf("stored hash %q after CompleteInvite", stored.PasswordHash)
		}
		_, err = s.CompleteInvite(t.Context(), tok.Hash, epoch, "$argon2id$again")
		wantErr(t, "CompleteInvite twice", err, storage.ErrNotFound)
	})

	t.Run("ExpiredAndSupersededRefused", func(t *testing.T) {
		s := o.newStore(t)
		u := createInvitedUser(t, s, 1)
		first, second := inviteRecord("first", u.ID, time.Hour), inviteRecord("second", u.ID, time.Hour)
		wantErr(t, "IssueInviteToken first", s.IssueInviteToken(t.Context(), first), nil)
		wantErr(t, "IssueInviteToken second", s.IssueInviteToken(t.Context(), second), nil)
		_, err := s.InviteTokenUser(t.Context(), first.Hash, epoch)
		wantErr(t, "InviteTokenUser of a superseded token", err, storage.ErrNotFound)
		_, err = s.InviteTokenUser(t.Context(), second.Hash, at(time.Hour))
		wantErr(t, "InviteTokenUser at expiry", err, storage.ErrNotFound)
		_, err = s.CompleteInvite(t.Context(), second.Hash, at(time.Hour), "$argon2id$x")
		wantErr(t, "CompleteInvite at expiry", err, storage.ErrNotFound)
		if stored, _ := s.UserByID(t.Context(), u.ID); stored.PasswordHash != u.PasswordHash {
			t.Fatal("a refused CompleteInvite changed the password")
		}
	})

	// A hash issued again, to another user, is that user's token alone:
	// voiding the first user's invitations leaves it standing.
	t.Run("ReissuedHashBelongsToNewUser", func(t *testing.T) {
		s := o.newStore(t)
		first, second := createInvitedUser(t, s, 1), createInvitedUser(t, s, 2)
		tok := inviteRecord("same", first.ID, time.Hour)
		wantErr(t, "IssueInviteToken to the first user", s.IssueInviteToken(t.Context(), tok), nil)
		tok.UserID = second.ID
		wantErr(t, "IssueInviteToken to the second user", s.IssueInviteToken(t.Context(), tok), nil)
		wantErr(t, "QueueInviteMail of the first user", s.QueueInviteMail(t.Context(), first.ID, epoch), nil)
		got, err := s.InviteTokenUser(t.Context(), tok.Hash, epoch)
		wantErr(t, "InviteTokenUser", err, nil)
		if got.ID != second.ID {
			t.Fatalf("InviteTokenUser = %s, want %s", got.ID, second.ID)
		}
	})

	t.Run("KindsDoNotMix", func(t *testing.T) {
		s := o.newStore(t)
		u := createInvitedUser(t, s, 1)
		invite, reset := inviteRecord("x", u.ID, time.Hour), tokenRecord("y", u.ID, time.Hour)
		wantErr(t, "IssueInviteToken", s.IssueInviteToken(t.Context(), invite), nil)
		wantErr(t, "IssueResetToken", s.IssueResetToken(t.Context(), reset), nil)
		wantTokenUser(t, s, invite.Hash, epoch, "")
		_, _, err := s.CompleteReset(t.Context(), invite.Hash, epoch, "$argon2id$x", storage.Mail{})
		wantErr(t, "CompleteReset with an invite token", err, storage.ErrNotFound)
		_, err = s.InviteTokenUser(t.Context(), reset.Hash, epoch)
		wantErr(t, "InviteTokenUser with a reset token", err, storage.ErrNotFound)
		_, err = s.CompleteInvite(t.Context(), reset.Hash, epoch, "$argon2id$x")
		wantErr(t, "CompleteInvite with a reset token", err, storage.ErrNotFound)
		// Each kind voids only its own.
		wantTokenUser(t, s, reset.Hash, epoch, u.ID)
		if _, err := s.InviteTokenUser(t.Context(), invite.Hash, epoch); err != nil {
			t.Fatalf("invite token voided by a reset token: %v", err)
		}
	})

	// AD2: an invitation sets the first password only. Once the user has
	// one (the operator's set-password, a completed reset), a waiting
	// token is void: it neither finds the user nor replaces the password.
	t.Run("VoidOncePasswordIsSet", func(t *testing.T) {
		for _, how := range []string{"SetPasswordHash", "CompleteReset"} {
			t.Run(how, func(t *testing.T) {
				s := o.newStore(t)
				u := createInvitedUser(t, s, 1)
				tok := inviteRecord("waiting", u.ID, time.Hour)
				wantErr(t, "IssueInviteToken", s.IssueInviteToken(t.Context(), tok), nil)
				if how == "SetPasswordHash" {
					_, err := s.SetPasswordHash(t.Context(), u.ID, "$argon2id$set")
					wantErr(t, how, err, nil)
				} else {
					reset := tokenRecord("reset", u.ID, time.Hour)
					wantErr(t, "IssueResetToken", s.IssueResetToken(t.Context(), reset), nil)
					_, _, err := s.CompleteReset(t.Context(), reset.Hash, epoch, "$argon2id$set", storage.Mail{})
					wantErr(t, how, err, nil)
				}
				_, err := s.InviteTokenUser(t.Context(), tok.Hash, epoch)
				wantErr(t, "InviteTokenUser after "+how, err, storage.ErrNotFound)
				_, err = s.CompleteInvite(t.Context(), tok.Hash, epoch, "$argon2id$invite")
				wantErr(t, "CompleteInvite after "+how, err, storage.ErrNotFound)
				if stored, _ := s.UserByID(t.Context(), u.ID); stored.PasswordHash != "$argon2id$set" {
					t.Fatalf("stored hash %q: the invitation replaced the password", stored.PasswordHash)
				}
			})
		}
	})

	// A disabled user's invitation does not stand either: the password
	// would wait for whoever enables the account.
	t.Run("VoidWhileDisabled", func(t *testing.T) {
		s := o.newStore(t)
		u := createInvitedUser(t, s, 1)
		tok := inviteRecord("waiting", u.ID, time.Hour)
		wantErr(t, "IssueInviteToken", s.IssueInviteToken(t.Context(), tok), nil)
		if _, err := s.SetUserDisabled(t.Context(), u.ID, true); err != nil {
			t.Fatal(err)
		}
		_, err := s.InviteTokenUser(t.Context(), tok.Hash, epoch)
		wantErr(t, "InviteTokenUser of a disabled user", err, storage.ErrNotFound)
		_, err = s.CompleteInvite(t.Context(), tok.Hash, epoch, "$argon2id$invite")
		wantErr(t, "CompleteInvite of a disabled user", err, storage.ErrNotFound)
		if stored, _ := s.UserByID(t.Context(), u.ID); stored.PasswordHash != "" {
			t.Fatalf("stored hash %q: a disabled user's invitation set a password", stored.PasswordHash)
		}
	})

	t.Run("SweepExpired", func(t *testing.T) {
		s := o.newStore(t)
		u, v := createInvitedUser(t, s, 1), createInvitedUser(t, s, 2)
		soon, later := inviteRecord("soon", u.ID, time.Minute), inviteRecord("later", v.ID, time.Hour)
		wantErr(t, "IssueInviteToken soon", s.IssueInviteToken(t.Context(), soon), nil)
		wantErr(t, "IssueInviteToken later", s.IssueInviteToken(t.Context(), later), nil)
		n, err := s.DeleteExpiredInviteTokens(t.Context(), at(time.Minute))
		wantErr(t, "DeleteExpiredInviteTokens", err, nil)
		if n != 1 {
			t.Fatalf("swept %d invite tokens, want 1", n)
		}
		if _, err := s.InviteTokenUser(t.Context(), later.Hash, at(time.Minute)); err != nil {
			t.Fatalf("a live invite token was swept: %v", err)
		}
		// The swept token's index entry went with it: a new token for u works.
		again := inviteRecord("again", u.ID, 2*time.Hour)
		wantErr(t, "IssueInviteToken again", s.IssueInviteToken(t.Context(), again), nil)
		if got, err := s.InviteTokenUser(t.Context(), again.Hash, at(time.Minute)); err != nil || got.ID != u.ID {
			t.Fatalf("InviteTokenUser after sweep: %v %v", got.ID, err)
		}
	})

	t.Run("QueueInviteMailVoidsAndQueuesJob", func(t *testing.T) {
		s := o.newStore(t)
		u := createInvitedUser(t, s, 1)
		old := inviteRecord("old", u.ID, time.Hour)
		wantErr(t, "IssueInviteToken", s.IssueInviteToken(t.Context(), old), nil)
		wantErr(t, "QueueInviteMail", s.QueueInviteMail(t.Context(), u.ID, epoch), nil)
		_, err := s.InviteTokenUser(t.Context(), old.Hash, epoch)
		wantErr(t, "InviteTokenUser after QueueInviteMail", err, storage.ErrNotFound)
		mail := allMail(t, s)
		if len(mail) != 1 {
			t.Fatalf("queue holds %d mails, want 1", len(mail))
		}
		m := mail[0]
		m.ID = 0
		wantEqual(t, "queued invite job", m, storage.Mail{Kind: storage.MailKindInvite, UserID: u.ID, To: u.Email, CreatedAt: epoch, NextAttempt: epoch})
		wantErr(t, "QueueInviteMail of an unknown user", s.QueueInviteMail(t.Context(), "ffffffffffffffffffffffffffffffff", epoch), storage.ErrNotFound)
		wantErr(t, "IssueInviteToken of an unknown user", s.IssueInviteToken(t.Context(), inviteRecord("z", "ffffffffffffffffffffffffffffffff", time.Hour)), storage.ErrNotFound)
	})
}
