package bolt

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// checkIndexesOf fails unless every index entry of the store points at a
// record that points back at it, and every record has its index entries.
// The conformance run calls it on each test's file after the suite closed it.
func checkIndexesOf(t *testing.T, path string) {
	t.Helper()
	s := openTest(t, path)
	defer s.Close()
	if err := s.db.View(checkIndexes); err != nil {
		t.Errorf("index check of %s: %v", path, err)
	}
}

// The index check covers every kind of mailed token: a reset's or an
// invitation's per-user index entry that is missing or left behind is
// reported, and so is a second live token of one kind for one user.
func TestCheckIndexesCoversTokens(t *testing.T) {
	for _, k := range []tokenKind{resetKind, inviteKind} {
		t.Run(k.mailKind, func(t *testing.T) {
			s := openTest(t, filepath.Join(t.TempDir(), "g.db"))
			defer s.Close()
			ctx := t.Context()
			must(t, s.CreateUser(ctx, storage.User{ID: "u1", Email: "a@example.com"}))
			tok := storage.ResetToken{Hash: storage.HashSecret("t1"), UserID: "u1", ExpiresAt: time.Now().Add(time.Hour)}
			must(t, s.db.Update(func(tx *bbolt.Tx) error { return issueToken(tx, k, tok) }))
			if err := s.db.View(checkIndexes); err != nil {
				t.Fatalf("sound file: %v", err)
			}
			for _, c := range []struct {
				name   string
				damage func(tx *bbolt.Tx) error
			}{
				{"index entry missing", func(tx *bbolt.Tx) error {
					return tx.Bucket(k.byUser).Delete(userHashKey("u1", tok.Hash))
				}},
				{"index entry left behind", func(tx *bbolt.Tx) error {
					return tx.Bucket(k.byUser).Put(userHashKey("u1", storage.HashSecret("gone")), nil)
				}},
				{"second token", func(tx *bbolt.Tx) error {
					other := storage.ResetToken{Hash: storage.HashSecret("t2"), UserID: "u1", ExpiresAt: tok.ExpiresAt}
					if err := tx.Bucket(k.tokens).Put(other.Hash[:], encodeResetToken(other)); err != nil {
						return err
					}
					return tx.Bucket(k.byUser).Put(userHashKey("u1", other.Hash), nil)
				}},
			} {
				err := s.db.Update(func(tx *bbolt.Tx) error {
					if err := c.damage(tx); err != nil {
						return err
					}
					if checkIndexes(tx) == nil {
						t.Errorf("%s: not reported", c.name)
					}
					return errRollback
				})
				if err != errRollback {
					t.Fatal(err)
				}
			}
		})
	}
}

var errRollback = errors.New("roll back")

// Random sequences of the store's own operations on both kinds of token and
// their users never leave a file that checkIndexes (and so Verify) calls
// damaged: the check has no false alarm on what the store itself writes.
func TestTokenOperationsKeepIndexesExact(t *testing.T) {
	for seed := range uint64(30) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "g.db")
			s := openTest(t, path)
			ctx := t.Context()
			rng := rand.New(rand.NewPCG(seed, 1))
			base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			ids := []string{"u1", "u2", "u3"}
			hashes := []storage.Hash{storage.HashSecret("a"), storage.HashSecret("b"), storage.HashSecret("c"), storage.HashSecret("d")}
			for _, id := range ids {
				must(t, s.CreateUser(ctx, storage.User{ID: id, Email: id + "@example.com"}))
			}
			for step := range 300 {
				id := ids[rng.IntN(len(ids))]
				h := hashes[rng.IntN(len(hashes))]
				now := base.Add(time.Duration(rng.IntN(100)) * time.Minute)
				tok := storage.ResetToken{Hash: h, UserID: id, CreatedAt: now, ExpiresAt: now.Add(time.Duration(rng.IntN(60)) * time.Minute)}
				var op string
				var err error
				switch rng.IntN(13) {
				case 0:
					op, err = "QueueInviteMail", s.QueueInviteMail(ctx, id, now)
				case 1, 2:
					op, err = "IssueInviteToken", s.IssueInviteToken(ctx, tok)
				case 3:
					op = "CompleteInvite"
					_, err = s.CompleteInvite(ctx, h, now, "pw")
				case 4:
					op = "DeleteExpiredInviteTokens"
					_, err = s.DeleteExpiredInviteTokens(ctx, now)
				case 5:
					op, err = "DeleteUser", s.DeleteUser(ctx, id)
				case 6:
					op, err = "CreateUser", s.CreateUser(ctx, storage.User{ID: id, Email: id + "@example.com"})
				case 7:
					op, err = "IssueResetToken", s.IssueResetToken(ctx, tok)
				case 8:
					op = "CompleteReset"
					_, _, err = s.CompleteReset(ctx, h, now, "pw2", storage.Mail{})
				case 9:
					op = "DeleteExpiredResetTokens"
					_, err = s.DeleteExpiredResetTokens(ctx, now)
				case 10:
					op = "SetUserDisabled"
					_, err = s.SetUserDisabled(ctx, id, rng.IntN(2) == 0)
				case 11:
					op = "SetPasswordHash"
					_, err = s.SetPasswordHash(ctx, id, "")
				case 12:
					op, err = "QueueResetMail", s.QueueResetMail(ctx, id, now)
				}
				_ = err // ErrNotFound etc. are part of the game
				if cerr := s.db.View(checkIndexes); cerr != nil {
					t.Fatalf("step %d %s(%s): %v", step, op, id, cerr)
				}
			}
			must(t, s.Close())
			if _, err := Verify(path, time.Second); err != nil {
				t.Fatal(err)
			}
		})
	}
}
