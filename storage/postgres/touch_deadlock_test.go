package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// Review r2 (f2da7b1..HEAD): DeleteOtherSessions locks the user, then the
// kept session's row (UPDATE ... epoch), then, in a second statement, the
// user's other session rows (DELETE). TouchSessions, the last-seen batch
// every replica writes off the request path, is one UPDATE that locks the
// rows it touches in whatever order its plan meets them and takes no user
// lock. A batch that holds another session of the user and waits for the
// kept one, while "sign out everywhere else" holds the kept one and waits
// for the other, is a deadlock: PostgreSQL aborts one with 40P01, the click
// answers 503 store_unavailable (or the batch's last-seen times are lost).
// The same holds for every multi-row revocation (DeleteUserSessions,
// SetUserDisabled, ChangePassword, CompleteReset: a plain concurrency loop
// of DeleteUserSessions against TouchSessions hits 40P01 within a few
// hundred rounds). A touch is best effort; it should never wait for a row a
// revocation holds (FOR NO KEY UPDATE SKIP LOCKED), so it can never close a
// cycle.
//
// The interleaving is forced with a third connection that holds a third
// session of the user, the first the DELETE meets: the DELETE waits there
// with the kept row already locked; the touch then locks the other row and
// queues on the kept one; releasing the holder closes the cycle. Each round
// forces it once (the touch meets its two rows in either order depending on
// its plan; the one that reaches "other" first deadlocks).
func TestSignOutElsewhereAndTouchDoNotDeadlock(t *testing.T) {
	url := pg.NewDatabase(t)
	s := openURL(t, url)
	holder := connect(t, url)
	watcher := connect(t, url)
	waitForWaiters := func(n int) bool {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			var waiting int
			if err := watcher.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
			if waiting >= n {
				return true
			}
			time.Sleep(5 * time.Millisecond)
		}
		return false
	}

	for round := range 3 {
		u := storage.User{ID: storage.NewUserID(), Email: fmt.Sprintf("u%d@example.com", round), CreatedAt: epochNow}
		if err := s.CreateUser(t.Context(), u); err != nil {
			t.Fatal(err)
		}
		// Inserted in this order: the DELETE meets "first" before "other".
		first, other, keep := epochSession(fmt.Sprint("first ", round), u, 0), epochSession(fmt.Sprint("other ", round), u, 0), epochSession(fmt.Sprint("keep ", round), u, 0)
		for _, sess := range []storage.Session{first, other, keep} {
			if err := s.CreateSession(t.Context(), sess); err != nil {
				t.Fatal(err)
			}
		}

		hold, err := holder.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := hold.Exec(t.Context(), "SELECT 1 FROM sessions WHERE id_hash = $1 FOR UPDATE", first.IDHash[:]); err != nil {
			t.Fatal(err)
		}
		signedOut := make(chan error, 1)
		go func() {
			_, err := s.DeleteOtherSessions(t.Context(), u.ID, keep.IDHash)
			signedOut <- err
		}()
		if !waitForWaiters(1) {
			t.Fatal("DeleteOtherSessions never waited for the held session")
		}
		touched := make(chan error, 1)
		go func() {
			touched <- s.TouchSessions(t.Context(), map[storage.Hash]time.Time{
				other.IDHash: epochNow.Add(time.Minute), keep.IDHash: epochNow.Add(time.Minute)})
		}()
		waitForWaiters(2) // the touch queues on the kept row (or skips it: then it is done)
		if err := hold.Rollback(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := <-signedOut; err != nil {
			t.Errorf("round %d: DeleteOtherSessions racing the last-seen batch: %v", round, err)
		}
		if err := <-touched; err != nil {
			t.Errorf("round %d: TouchSessions racing DeleteOtherSessions: %v", round, err)
		}
	}
}
