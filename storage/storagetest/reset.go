package storagetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

func tokenRecord(name, userID string, ttl time.Duration) storage.ResetToken {
	return storage.ResetToken{
		Hash:      hashOf("reset token %s", name),
		UserID:    userID,
		CreatedAt: at(-time.Minute),
		ExpiresAt: at(ttl),
	}
}

// issue stores a token of user that is valid from at(-time.Minute) to at(ttl).
func issue(t *testing.T, s storage.Store, name string, u storage.User, ttl time.Duration) storage.ResetToken {
	t.Helper()
	tok := tokenRecord(name, u.ID, ttl)
	wantErr(t, "IssueResetToken "+name, s.IssueResetToken(t.Context(), tok), nil)
	return tok
}

// resetJob is the job QueueResetMail(u.ID, now) queues, without its ID.
func resetJob(u storage.User, now time.Time) storage.Mail {
	return storage.Mail{Kind: storage.MailKindPasswordReset, UserID: u.ID, To: u.Email, CreatedAt: now, NextAttempt: now}
}

// wantTokenUser fails unless the token is valid at now for userID ("": invalid).
func wantTokenUser(t *testing.T, s storage.Store, h storage.Hash, now time.Time, userID string) {
	t.Helper()
	u, err := s.ResetTokenUser(t.Context(), h, now)
	if userID == "" {
		wantErr(t, "ResetTokenUser of an invalid token", err, storage.ErrNotFound)
		return
	}
	wantErr(t, "ResetTokenUser", err, nil)
	if u.ID != userID {
		t.Fatalf("ResetTokenUser = %q, want %q", u.ID, userID)
	}
}

// allMail returns the whole queue.
func allMail(t *testing.T, s storage.Store) []storage.Mail {
	t.Helper()
	m, err := s.DueMail(t.Context(), at(1000*time.Hour), 1000)
	wantErr(t, "DueMail", err, nil)
	return m
}

func testReset(t *testing.T, o Opener) {
	t.Run("IssueQueuesNothing", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		tok := issue(t, s, "a", u, 30*time.Minute)
		wantTokenUser(t, s, tok.Hash, epoch, u.ID)
		if q := allMail(t, s); len(q) != 0 {
			t.Fatalf("IssueResetToken queued mail: %+v", q)
		}
	})

	t.Run("IssueUnknownUser", func(t *testing.T) {
		s := o.newStore(t)
		tok := tokenRecord("x", userRecord(1).ID, time.Hour)
		err := s.IssueResetToken(t.Context(), tok)
		wantErr(t, "IssueResetToken for an unknown user", err, storage.ErrNotFound)
		wantTokenUser(t, s, tok.Hash, epoch, "")
	})

	// A reset request queues a job that names the user and holds no secret,
	// and voids the user's tokens at once, before any mail goes out.
	t.Run("QueueResetMail", func(t *testing.T) {
		s := o.newStore(t)
		alice, bob := createUser(t, s, 1), createUser(t, s, 2)
		older := issue(t, s, "older", alice, time.Hour)
		bobs := issue(t, s, "bob", bob, time.Hour)
		wantErr(t, "QueueResetMail", s.QueueResetMail(t.Context(), alice.ID, at(time.Minute)), nil)
		wantTokenUser(t, s, older.Hash, epoch, "") // voided by the request
		wantTokenUser(t, s, bobs.Hash, epoch, bob.ID)
		queued := allMail(t, s)
		if len(queued) != 1 || queued[0].ID == 0 {
			t.Fatalf("queue after QueueResetMail: %+v, want one job with an ID", queued)
		}
		want := resetJob(alice, at(time.Minute))
		want.ID = queued[0].ID
		wantEqual(t, "queued reset job", queued[0], want)
		wantDue(t, s, epoch, 10) // due at now, not before

		wantErr(t, "QueueResetMail again", s.QueueResetMail(t.Context(), alice.ID, at(2*time.Minute)), nil)
		if q := allMail(t, s); len(q) != 2 || q[1].ID <= q[0].ID {
			t.Fatalf("queue after a second request: %+v, want two jobs in order", q)
		}
	})

	t.Run("QueueResetMailUnknownUser", func(t *testing.T) {
		s := o.newStore(t)
		err := s.QueueResetMail(t.Context(), userRecord(1).ID, epoch)
		wantErr(t, "QueueResetMail for an unknown user", err, storage.ErrNotFound)
		if q := allMail(t, s); len(q) != 0 {
			t.Fatalf("mail queued for an unknown user: %+v", q)
		}
	})

	t.Run("NewTokenVoidsOlder", func(t *testing.T) {
		s := o.newStore(t)
		alice, bob := createUser(t, s, 1), createUser(t, s, 2)
		first := issue(t, s, "first", alice, time.Hour)
		bobs := issue(t, s, "bob", bob, time.Hour)
		second := issue(t, s, "second", alice, time.Hour)
		wantTokenUser(t, s, first.Hash, epoch, "")
		wantTokenUser(t, s, second.Hash, epoch, alice.ID)
		wantTokenUser(t, s, bobs.Hash, epoch, bob.ID)
	})

	t.Run("ResetTokenUserValidity", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		tok := issue(t, s, "a", u, 30*time.Minute)
		for _, tc := range []struct {
			name string
			hash storage.Hash
			now  time.Time
			want string
		}{
			{"valid", tok.Hash, epoch, u.ID},
			{"still valid, not consumed by the lookup", tok.Hash, at(30*time.Minute - time.Microsecond), u.ID},
			{"expires now", tok.Hash, at(30 * time.Minute), ""},
			{"expired", tok.Hash, at(time.Hour), ""},
			{"unknown", hashOf("reset token b"), epoch, ""},
		} {
			t.Run(tc.name, func(t *testing.T) { wantTokenUser(t, s, tc.hash, tc.now, tc.want) })
		}
	})

	t.Run("CompleteReset", func(t *testing.T) {
		s := o.newStore(t)
		alice, bob := createUser(t, s, 1), createUser(t, s, 2)
		var sessions []storage.Session
		for i := range 3 {
			sessions = append(sessions, sessionRecord(fmt.Sprint("alice ", i), alice.ID, time.Hour, epoch))
		}
		bobSession := sessionRecord("bob", bob.ID, time.Hour, epoch)
		createSessions(t, s, append(sessions, bobSession))
		bobToken := issue(t, s, "bob", bob, time.Hour)
		older := issue(t, s, "older", alice, time.Hour)
		tok := issue(t, s, "alice", alice, time.Hour)
		queuedBefore := len(allMail(t, s))

		notice := storage.Mail{To: alice.Email, Subject: "Your password was changed", Text: "notice"}
		u, n, err := s.CompleteReset(t.Context(), tok.Hash, epoch, "$argon2id$new", notice)
		wantErr(t, "CompleteReset", err, nil)
		alice.PasswordHash = "$argon2id$new"
		if bumpsEpochs(s) {
			alice.Epoch++ // a credential change
		}
		wantEqual(t, "user returned by CompleteReset", u, alice)
		if n != 3 {
			t.Fatalf("CompleteReset deleted %d sessions, want 3", n)
		}
		stored, err := s.UserByID(t.Context(), alice.ID)
		wantErr(t, "UserByID", err, nil)
		wantEqual(t, "stored user", stored, alice)
		for _, sess := range sessions {
			wantSession(t, s, sess.IDHash, nil)
		}
		wantSession(t, s, bobSession.IDHash, &bobSession)
		wantDeleteUserSessions(t, s, alice.ID, 0)
		wantTokenUser(t, s, tok.Hash, epoch, "")   // consumed
		wantTokenUser(t, s, older.Hash, epoch, "") // voided
		wantTokenUser(t, s, bobToken.Hash, epoch, bob.ID)

		queued := allMail(t, s)
		if len(queued) != queuedBefore+1 {
			t.Fatalf("queue grew by %d, want 1 (the notice)", len(queued)-queuedBefore)
		}
		last := queued[len(queued)-1]
		notice.ID, notice.CreatedAt, notice.NextAttempt = last.ID, epoch, epoch
		wantEqual(t, "queued notice", last, notice)

		_, _, err = s.CompleteReset(t.Context(), tok.Hash, epoch, "$argon2id$again", notice)
		wantErr(t, "CompleteReset with a used token", err, storage.ErrNotFound)
	})

	t.Run("CompleteResetWithoutNotice", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		tok := issue(t, s, "a", u, time.Hour)
		before := len(allMail(t, s))
		_, n, err := s.CompleteReset(t.Context(), tok.Hash, epoch, "$argon2id$new", storage.Mail{})
		wantErr(t, "CompleteReset", err, nil)
		if n != 0 {
			t.Fatalf("CompleteReset deleted %d sessions of a user with none", n)
		}
		if after := len(allMail(t, s)); after != before {
			t.Fatalf("CompleteReset without notice.To queued %d mails", after-before)
		}
	})

	t.Run("CompleteResetRefused", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			hash func(tok storage.ResetToken) storage.Hash
			now  time.Time
		}{
			{"expired", func(tok storage.ResetToken) storage.Hash { return tok.Hash }, at(time.Hour)},
			{"expires now", func(tok storage.ResetToken) storage.Hash { return tok.Hash }, at(30 * time.Minute)},
			{"unknown", func(storage.ResetToken) storage.Hash { return hashOf("unknown") }, epoch},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := o.newStore(t)
				u := createUser(t, s, 1)
				sess := sessionRecord("a", u.ID, 2*time.Hour, epoch)
				createSessions(t, s, []storage.Session{sess})
				tok := issue(t, s, "a", u, 30*time.Minute)
				before := len(allMail(t, s))
				_, n, err := s.CompleteReset(t.Context(), tc.hash(tok), tc.now, "$argon2id$new",
					storage.Mail{To: u.Email, Subject: "changed"})
				wantErr(t, "CompleteReset", err, storage.ErrNotFound)
				if n != 0 {
					t.Fatalf("refused CompleteReset reported %d sessions", n)
				}
				got, err := s.UserByID(t.Context(), u.ID)
				wantErr(t, "UserByID", err, nil)
				wantEqual(t, "user after a refused reset", got, u)
				wantSession(t, s, sess.IDHash, &sess)
				if tc.name == "unknown" {
					wantTokenUser(t, s, tok.Hash, epoch, u.ID) // the real token still works
				}
				if after := len(allMail(t, s)); after != before {
					t.Fatalf("refused CompleteReset queued %d mails", after-before)
				}
			})
		}
	})

	t.Run("ConcurrentCompleteReset", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		var sessions []storage.Session
		for i := range 5 {
			sessions = append(sessions, sessionRecord(fmt.Sprint(i), u.ID, time.Hour, epoch))
		}
		createSessions(t, s, sessions)
		tok := issue(t, s, "a", u, time.Hour)
		const workers = 20
		var (
			wg                 sync.WaitGroup
			mu                 sync.Mutex
			won, lost, deleted int
			other              []error
		)
		start := make(chan struct{})
		for i := range workers {
			wg.Go(func() {
				<-start
				_, n, err := s.CompleteReset(t.Context(), tok.Hash, epoch, fmt.Sprint("$argon2id$", i), storage.Mail{})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won++
					deleted += n
				case errors.Is(err, storage.ErrNotFound):
					lost++
				default:
					other = append(other, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if won != 1 || lost != workers-1 || len(other) != 0 {
			t.Fatalf("%d resets succeeded, %d not found, other errors %v; want exactly 1 success", won, lost, other)
		}
		if deleted != len(sessions) {
			t.Fatalf("the winning reset deleted %d sessions, want %d", deleted, len(sessions))
		}
	})

	t.Run("DeleteExpiredResetTokens", func(t *testing.T) {
		s := o.newStore(t)
		var tokens []storage.ResetToken
		for i, ttl := range []time.Duration{-time.Hour, 0, time.Microsecond, time.Hour} {
			tokens = append(tokens, issue(t, s, fmt.Sprint(i), createUser(t, s, i), ttl))
		}
		n, err := s.DeleteExpiredResetTokens(t.Context(), epoch)
		wantErr(t, "DeleteExpiredResetTokens", err, nil)
		if n != 2 {
			t.Fatalf("DeleteExpiredResetTokens = %d, want 2", n)
		}
		// Looked up before their expiry, deleted tokens are gone and kept ones work.
		before := at(-2 * time.Hour)
		wantTokenUser(t, s, tokens[0].Hash, before, "")
		wantTokenUser(t, s, tokens[1].Hash, before, "")
		wantTokenUser(t, s, tokens[2].Hash, before, tokens[2].UserID)
		wantTokenUser(t, s, tokens[3].Hash, epoch, tokens[3].UserID)
		n, err = s.DeleteExpiredResetTokens(t.Context(), epoch)
		wantErr(t, "DeleteExpiredResetTokens again", err, nil)
		if n != 0 {
			t.Fatalf("second DeleteExpiredResetTokens = %d, want 0", n)
		}
	})
}
