package authflows

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// Probe (passes today; kept because nothing else tests it): AD2 "single
// use" under concurrency. Many browsers posting one invitation at once, each
// with its own password: exactly one is accepted and signed in, and the
// stored password is that one's.
func TestInviteAcceptedOnceUnderConcurrency(t *testing.T) {
	const n = 8
	e := newTestEnv(t, func(c *Config) { c.InviteTTL = 72 * time.Hour })
	u := e.CreateUser(t, "ivy@example.com", "")
	inviteToken := "concurrent-invite-token"
	if err := e.Store.IssueInviteToken(t.Context(), storage.ResetToken{Hash: storage.HashSecret(inviteToken), UserID: u.ID,
		CreatedAt: e.Clock.Now(), ExpiresAt: e.Clock.Now().Add(72 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := e.JSONRequest(http.MethodPost, "/auth/invite", map[string]string{"token": inviteToken, "password": fmt.Sprintf("passphrase number %d of eight", i)})
			r.RemoteAddr = fmt.Sprintf("198.51.100.%d:4000", i+1)
			statuses[i] = e.Do(r).StatusCode
		})
	}
	wg.Wait()
	winner := -1
	for i, s := range statuses {
		if s == http.StatusOK {
			if winner >= 0 {
				t.Fatalf("invitation accepted twice: %v", statuses)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("no acceptance: %v", statuses)
	}
	stored, err := e.Store.UserByID(t.Context(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := e.Hasher.Verify(t.Context(), stored.PasswordHash, password.Normalize(fmt.Sprintf("passphrase number %d of eight", winner))); !ok {
		t.Error("the stored password is not the accepted one")
	}
	if ss, _ := e.Store.SessionsOfUser(t.Context(), u.ID); len(ss) != 1 {
		t.Errorf("%d sessions after one acceptance", len(ss))
	}
}
