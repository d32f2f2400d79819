package bolt

import (
	"errors"
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
