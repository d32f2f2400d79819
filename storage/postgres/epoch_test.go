package postgres_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/postgres"
)

// The credential epoch on PostgreSQL (issue 10's semantics; the
// conformance suite takes these tests over once every backend keeps
// epochs): every credential change bumps User.Epoch, and CreateSession
// writes a session only while its user exists, is enabled and is still at
// the session's epoch.

var epochNow = time.Date(2031, time.March, 4, 5, 6, 7, 891000000, time.UTC)

func epochUser(t *testing.T, s *postgres.Store) storage.User {
	t.Helper()
	u := storage.User{ID: storage.NewUserID(), Email: "alice@example.com", PasswordHash: "$argon2id$old", CreatedAt: epochNow}
	if err := s.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

func epochSession(name string, u storage.User, epoch uint64) storage.Session {
	return storage.Session{IDHash: storage.HashSecret("session " + name), UserID: u.ID, Email: u.Email, Epoch: epoch,
		CreatedAt: epochNow, ExpiresAt: epochNow.Add(time.Hour), LastSeen: epochNow}
}

func resetToken(t *testing.T, s *postgres.Store, u storage.User) storage.Hash {
	t.Helper()
	tok := storage.ResetToken{Hash: storage.HashSecret("token of " + u.ID), UserID: u.ID, CreatedAt: epochNow, ExpiresAt: epochNow.Add(time.Hour)}
	if err := s.IssueResetToken(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	return tok.Hash
}

func TestEpochBumpedByEveryCredentialChange(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, s *postgres.Store, u storage.User) error
	}{
		{"SetPasswordHash", func(t *testing.T, s *postgres.Store, u storage.User) error {
			_, err := s.SetPasswordHash(t.Context(), u.ID, "$argon2id$changed")
			return err
		}},
		{"ChangePassword", func(t *testing.T, s *postgres.Store, u storage.User) error {
			_, _, err := s.ChangePassword(t.Context(), u.ID, u.Epoch, "$argon2id$changed")
			return err
		}},
		{"DeleteUserSessions", func(t *testing.T, s *postgres.Store, u storage.User) error {
			_, err := s.DeleteUserSessions(t.Context(), u.ID)
			return err
		}},
		{"CompleteReset", func(t *testing.T, s *postgres.Store, u storage.User) error {
			_, _, err := s.CompleteReset(t.Context(), resetToken(t, s, u), epochNow, "$argon2id$reset", storage.Mail{})
			return err
		}},
		{"SetUserDisabled", func(t *testing.T, s *postgres.Store, u storage.User) error {
			if _, err := s.SetUserDisabled(t.Context(), u.ID, true); err != nil {
				return err
			}
			_, err := s.SetUserDisabled(t.Context(), u.ID, false)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			defer s.Close()
			u := epochUser(t, s)
			if err := tc.change(t, s, u); err != nil {
				t.Fatal(err)
			}
			got, err := s.UserByID(t.Context(), u.ID)
			if err != nil || got.Epoch != u.Epoch+1 {
				t.Fatalf("Epoch after %s = %d (%v), want %d", tc.name, got.Epoch, err, u.Epoch+1)
			}
			stale := epochSession("stale", u, u.Epoch)
			if err := s.CreateSession(t.Context(), stale); !errors.Is(err, storage.ErrCredentialsChanged) {
				t.Fatalf("CreateSession at the old epoch: %v, want ErrCredentialsChanged", err)
			}
			if _, err := s.Session(t.Context(), stale.IDHash); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("a refused session was stored (%v)", err)
			}
			fresh := epochSession("fresh", u, got.Epoch)
			if err := s.CreateSession(t.Context(), fresh); err != nil {
				t.Fatalf("CreateSession at the new epoch: %v", err)
			}
		})
	}
}

func TestCreateSessionRefusesUnknownOrDisabledUser(t *testing.T) {
	s := open(t)
	defer s.Close()
	disabled := storage.User{ID: storage.NewUserID(), Email: "off@example.com", CreatedAt: epochNow, Disabled: true}
	if err := s.CreateUser(t.Context(), disabled); err != nil {
		t.Fatal(err)
	}
	unknown := storage.User{ID: storage.NewUserID(), Email: "nobody@example.com"}
	for _, u := range []storage.User{unknown, disabled} {
		sess := epochSession(u.Email, u, 0)
		if err := s.CreateSession(t.Context(), sess); !errors.Is(err, storage.ErrCredentialsChanged) {
			t.Fatalf("CreateSession of %s: %v, want ErrCredentialsChanged", u.Email, err)
		}
		if list, err := s.SessionsOfUser(t.Context(), u.ID); err != nil || len(list) != 0 {
			t.Fatalf("sessions of %s: %d (%v), want none", u.Email, len(list), err)
		}
	}
	// A repeated hash is still its own error, not a credential change.
	u := epochUser(t, s)
	sess := epochSession("twice", u, 0)
	if err := s.CreateSession(t.Context(), sess); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSession(t.Context(), sess); err == nil || errors.Is(err, storage.ErrCredentialsChanged) {
		t.Fatalf("second CreateSession under one hash: %v", err)
	}
}

func TestUpgradePasswordHash(t *testing.T) {
	s := open(t)
	defer s.Close()
	u := epochUser(t, s)
	if err := s.UpgradePasswordHash(t.Context(), u.ID, "$argon2id$not-the-stored-one", "$argon2id$upgraded"); !errors.Is(err, storage.ErrCredentialsChanged) {
		t.Fatalf("upgrade from a stale hash: %v, want ErrCredentialsChanged", err)
	}
	if err := s.UpgradePasswordHash(t.Context(), u.ID, u.PasswordHash, "$argon2id$upgraded"); err != nil {
		t.Fatal(err)
	}
	got, _ := s.UserByID(t.Context(), u.ID)
	if got.PasswordHash != "$argon2id$upgraded" || got.Epoch != u.Epoch {
		t.Fatalf("after the upgrade: hash %q epoch %d, want the new hash at epoch %d (same password)", got.PasswordHash, got.Epoch, u.Epoch)
	}
	if err := s.UpgradePasswordHash(t.Context(), storage.NewUserID(), "", "$argon2id$x"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("upgrade of an unknown user: %v, want ErrNotFound", err)
	}

	// A sign-in verified the old hash; a reset then replaced it. The
	// sign-in's upgrade leaves the reset's hash in place.
	if _, _, err := s.CompleteReset(t.Context(), resetToken(t, s, u), epochNow, "$argon2id$reset", storage.Mail{}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpgradePasswordHash(t.Context(), u.ID, "$argon2id$upgraded", "$argon2id$old-rehashed"); !errors.Is(err, storage.ErrCredentialsChanged) {
		t.Fatalf("upgrade after a reset: %v, want ErrCredentialsChanged", err)
	}
	if got, _ := s.UserByID(t.Context(), u.ID); got.PasswordHash != "$argon2id$reset" {
		t.Fatalf("hash after the refused upgrade = %q, want the reset's", got.PasswordHash)
	}
}

// TestNoSessionOutlivesConcurrentReset: sign-ins that read the user before
// a reset race it; whichever order PostgreSQL runs them in, none of their
// sessions survives the reset.
func TestNoSessionOutlivesConcurrentReset(t *testing.T) {
	s := open(t)
	defer s.Close()
	for round := range 5 {
		u, err := s.UserByEmail(t.Context(), "alice@example.com")
		if errors.Is(err, storage.ErrNotFound) {
			u = epochUser(t, s)
		}
		tok := resetToken(t, s, u)
		const signIns = 30
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range signIns {
			wg.Go(func() {
				<-start
				err := s.CreateSession(t.Context(), epochSession(fmt.Sprint("racing ", round, i), u, u.Epoch))
				if err != nil && !errors.Is(err, storage.ErrCredentialsChanged) {
					t.Errorf("CreateSession %d: %v", i, err)
				}
			})
		}
		wg.Go(func() {
			<-start
			if _, _, err := s.CompleteReset(t.Context(), tok, epochNow, "$argon2id$reset", storage.Mail{}); err != nil {
				t.Errorf("CompleteReset: %v", err)
			}
		})
		close(start)
		wg.Wait()
		if list, err := s.SessionsOfUser(t.Context(), u.ID); err != nil || len(list) != 0 {
			t.Fatalf("round %d: %d sessions (%v) outlived the reset", round, len(list), err)
		}
	}
}

// TestQueueResetRequest: issue 10's one store call of /auth/forgot. A known
// address voids the user's tokens and queues a reset job; an unknown one
// queues nothing, writes its one marker row and reports ErrNotFound.
func TestQueueResetRequest(t *testing.T) {
	url := pg.NewDatabase(t)
	s, err := postgres.Open(t.Context(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	u := epochUser(t, s)
	old := resetToken(t, s, u)
	got, err := s.QueueResetRequest(t.Context(), "  ALICE@Example.com ", epochNow)
	if err != nil || got.ID != u.ID {
		t.Fatalf("QueueResetRequest(known) = %s, %v; want the user", got.ID, err)
	}
	if _, err := s.ResetTokenUser(t.Context(), old, epochNow); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("older token still valid (%v)", err)
	}
	due, err := s.DueMail(t.Context(), epochNow, 10)
	if err != nil || len(due) != 1 || due[0].Kind != storage.MailKindPasswordReset || due[0].UserID != u.ID {
		t.Fatalf("queued %+v (%v), want one reset job for the user", due, err)
	}
	for range 2 {
		if _, err := s.QueueResetRequest(t.Context(), "nobody@example.com", epochNow); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("QueueResetRequest(unknown): %v, want ErrNotFound", err)
		}
	}
	if due, _ := s.DueMail(t.Context(), epochNow, 10); len(due) != 1 {
		t.Fatalf("an unknown address queued mail: %+v", due)
	}
	var markers int
	if err := connect(t, url).QueryRow(t.Context(), "SELECT count(*) FROM reset_requests").Scan(&markers); err != nil || markers != 1 {
		t.Fatalf("%d marker rows (%v) after two unknown requests, want 1", markers, err)
	}
}
