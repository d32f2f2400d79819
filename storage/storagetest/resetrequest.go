package storagetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// testResetRequest checks QueueResetRequest, POST /auth/forgot's one store
// call: a known address queues the user's reset job and voids their tokens;
// an unknown one queues nothing and reports ErrNotFound.
func testResetRequest(t *testing.T, o Opener) {
	t.Run("KnownAddress", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		tok := issue(t, s, "older", u, time.Hour)
		got, err := s.QueueResetRequest(t.Context(), "  USER1@Example.com ", epoch)
		wantErr(t, "QueueResetRequest", err, nil)
		wantEqual(t, "user of the request", got, u)
		wantTokenUser(t, s, tok.Hash, epoch, "") // voided
		queued := allMail(t, s)
		if len(queued) != 1 {
			t.Fatalf("%d mails queued, want 1", len(queued))
		}
		want := resetJob(u, epoch)
		want.ID = queued[0].ID
		wantEqual(t, "queued job", queued[0], want)
	})

	t.Run("UnknownAddress", func(t *testing.T) {
		s := o.newStore(t)
		createUser(t, s, 1)
		_, err := s.QueueResetRequest(t.Context(), "nobody@example.com", epoch)
		wantErr(t, "QueueResetRequest(unknown)", err, storage.ErrNotFound)
		if q := allMail(t, s); len(q) != 0 {
			t.Fatalf("an unknown address queued %+v", q)
		}
	})

	t.Run("DisabledAccount", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		if _, err := s.SetUserDisabled(t.Context(), u.ID, true); err != nil {
			t.Fatal(err)
		}
		_, err := s.QueueResetRequest(t.Context(), u.Email, epoch)
		wantErr(t, "QueueResetRequest(disabled)", err, storage.ErrNotFound)
		if q := allMail(t, s); len(q) != 0 {
			t.Fatalf("a disabled account queued %+v", q)
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		// Concurrent requests (a backend may share one commit among them)
		// each queue their own job.
		s := o.newStore(t)
		const n = 30
		for i := range n {
			createUser(t, s, i)
		}
		var wg sync.WaitGroup
		for i := range 2 * n {
			wg.Go(func() {
				_, err := s.QueueResetRequest(t.Context(), fmt.Sprintf("user%d@example.com", i), epoch)
				if i < n && err != nil || i >= n && err == nil {
					t.Errorf("QueueResetRequest(user%d): %v", i, err)
				}
			})
		}
		wg.Wait()
		seen := map[string]bool{}
		for _, m := range allMail(t, s) {
			seen[m.UserID] = true
		}
		if len(seen) != n {
			t.Fatalf("%d users have a queued job, want %d", len(seen), n)
		}
	})
}
