package storagetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// testSessionReads: Session is on every request's path, so a backend may
// answer it from memory (bbolt's session cache, the PostgreSQL cache), but
// only from memory it keeps exact (SS3): every change to a session is seen
// by the first read after the write returns, even when that session was
// read, and so possibly remembered, just before.
func testSessionReads(t *testing.T, o Opener) {
	changes := []struct {
		name string
		// change alters sess (already read twice) and returns what Session
		// must return next: nil for "gone".
		change func(t *testing.T, s storage.Store, sess storage.Session) *storage.Session
	}{
		{"DeleteSession", func(t *testing.T, s storage.Store, sess storage.Session) *storage.Session {
			wantErr(t, "DeleteSession", s.DeleteSession(t.Context(), sess.IDHash), nil)
			return nil
		}},
		{"DeleteUserSessions", func(t *testing.T, s storage.Store, sess storage.Session) *storage.Session {
			wantDeleteUserSessions(t, s, sess.UserID, 1)
			return nil
		}},
		{"SetUserDisabled", func(t *testing.T, s storage.Store, sess storage.Session) *storage.Session {
			_, err := s.SetUserDisabled(t.Context(), sess.UserID, true)
			wantErr(t, "SetUserDisabled", err, nil)
			return nil
		}},
		{"DeleteUser", func(t *testing.T, s storage.Store, sess storage.Session) *storage.Session {
			wantErr(t, "DeleteUser", s.DeleteUser(t.Context(), sess.UserID), nil)
			return nil
		}},
		{"CompleteReset", func(t *testing.T, s storage.Store, sess storage.Session) *storage.Session {
			u, err := s.UserByID(t.Context(), sess.UserID)
			wantErr(t, "UserByID", err, nil)
			tok := issue(t, s, "reads", u, time.Hour)
			_, _, err = s.CompleteReset(t.Context(), tok.Hash, epoch, "$argon2id$new", storage.Mail{})
			wantErr(t, "CompleteReset", err, nil)
			return nil
		}},
		{"DeleteExpiredSessions", func(t *testing.T, s storage.Store, sess storage.Session) *storage.Session {
			n, err := s.DeleteExpiredSessions(t.Context(), sess.ExpiresAt.Add(time.Second), 0)
			wantErr(t, "DeleteExpiredSessions", err, nil)
			if n != 1 {
				t.Fatalf("DeleteExpiredSessions deleted %d, want 1", n)
			}
			return nil
		}},
		{"TouchSessions", func(t *testing.T, s storage.Store, sess storage.Session) *storage.Session {
			sess.LastSeen = sess.LastSeen.Add(time.Minute)
			wantErr(t, "TouchSessions", s.TouchSessions(t.Context(), map[storage.Hash]time.Time{sess.IDHash: sess.LastSeen}), nil)
			return &sess
		}},
	}
	for _, c := range changes {
		t.Run("SeenAfter"+c.name, func(t *testing.T) {
			s := o.newStore(t)
			sess := withUser(t, s, sessionRecord("read", userRecord(1).ID, time.Hour, epoch))
			wantErr(t, "CreateSession", s.CreateSession(t.Context(), sess), nil)
			wantSession(t, s, sess.IDHash, &sess) // read, and perhaps remembered
			wantSession(t, s, sess.IDHash, &sess) // perhaps from memory
			want := c.change(t, s, sess)
			wantSession(t, s, sess.IDHash, want)
			wantSession(t, s, sess.IDHash, want)
		})
	}

	// Readers race the revocation: a read that began before the delete
	// committed may return the session, but once DeleteSession has returned,
	// no read may, however the readers' reads and memory interleave with it.
	t.Run("NoReadOutlivesConcurrentDelete", func(t *testing.T) {
		s := o.newStore(t)
		ctx, stop := context.WithCancel(t.Context())
		defer stop()
		var current atomic.Pointer[storage.Hash]
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for ctx.Err() == nil {
					if h := current.Load(); h != nil {
						_, _ = s.Session(ctx, *h)
					}
				}
			})
		}
		rounds := 200
		if testing.Short() {
			rounds = 50
		}
		for i := range rounds {
			sess := withUser(t, s, sessionRecord(time.Duration(i).String(), userRecord(1).ID, time.Hour, epoch))
			wantErr(t, "CreateSession", s.CreateSession(t.Context(), sess), nil)
			current.Store(&sess.IDHash)
			wantSession(t, s, sess.IDHash, &sess)
			wantErr(t, "DeleteSession", s.DeleteSession(t.Context(), sess.IDHash), nil)
			for range 20 {
				if _, err := s.Session(t.Context(), sess.IDHash); !errors.Is(err, storage.ErrNotFound) {
					t.Fatalf("round %d: Session after DeleteSession returned: %v, want ErrNotFound", i, err)
				}
			}
		}
		stop()
		wg.Wait()
	})
}
