package storagetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

func flowRecord(name string, ttl time.Duration) storage.OAuthFlow {
	return storage.OAuthFlow{
		StateHash:   hashOf("state %s", name),
		Provider:    "google",
		Purpose:     storage.PurposeLink,
		Verifier:    "verifier-" + name,
		Nonce:       "nonce-" + name,
		Redirect:    "/after/" + name + "?q=1",
		BrowserHash: hashOf("browser %s", name),
		SessionHash: hashOf("session %s", name),
		CreatedAt:   at(-time.Minute),
		ExpiresAt:   at(ttl),
	}
}

// wantTake fails unless TakeOAuthFlow at now returns want (nil: ErrNotFound).
func wantTake(t *testing.T, s storage.Store, h storage.Hash, now time.Time, want *storage.OAuthFlow) {
	t.Helper()
	got, err := s.TakeOAuthFlow(t.Context(), h, now)
	if want == nil {
		wantErr(t, "TakeOAuthFlow", err, storage.ErrNotFound)
		return
	}
	wantErr(t, "TakeOAuthFlow", err, nil)
	wantEqual(t, "TakeOAuthFlow", got, *want)
}

func testOAuth(t *testing.T, o Opener) {
	t.Run("TakeIsSingleUse", func(t *testing.T) {
		s := o.newStore(t)
		f := flowRecord("a", 10*time.Minute)
		login := flowRecord("b", 10*time.Minute)
		login.Provider, login.Purpose, login.Nonce, login.SessionHash = "github", storage.PurposeLogin, "", storage.Hash{}
		for _, flow := range []storage.OAuthFlow{f, login} {
			wantErr(t, "CreateOAuthFlow", s.CreateOAuthFlow(t.Context(), flow), nil)
		}
		wantTake(t, s, f.StateHash, epoch, &f)
		wantTake(t, s, f.StateHash, epoch, nil)
		wantTake(t, s, login.StateHash, epoch, &login)
		wantTake(t, s, login.StateHash, epoch, nil)
	})

	t.Run("Unknown", func(t *testing.T) {
		s := o.newStore(t)
		wantTake(t, s, hashOf("state nobody"), epoch, nil)
	})

	t.Run("ExpiredNotReturnedAndDeleted", func(t *testing.T) {
		for _, now := range []time.Time{at(10 * time.Minute), at(time.Hour)} {
			t.Run(fmt.Sprint(now.Sub(epoch)), func(t *testing.T) {
				s := o.newStore(t)
				f := flowRecord("a", 10*time.Minute)
				wantErr(t, "CreateOAuthFlow", s.CreateOAuthFlow(t.Context(), f), nil)
				wantTake(t, s, f.StateHash, now, nil)
				wantTake(t, s, f.StateHash, epoch, nil) // deleted by the expired take
			})
		}
	})

	t.Run("DeleteExpiredOAuthFlows", func(t *testing.T) {
		s := o.newStore(t)
		var flows []storage.OAuthFlow
		for i, ttl := range []time.Duration{-time.Hour, 0, time.Microsecond, 10 * time.Minute} {
			f := flowRecord(fmt.Sprint(i), ttl)
			wantErr(t, "CreateOAuthFlow", s.CreateOAuthFlow(t.Context(), f), nil)
			flows = append(flows, f)
		}
		n, err := s.DeleteExpiredOAuthFlows(t.Context(), epoch)
		wantErr(t, "DeleteExpiredOAuthFlows", err, nil)
		if n != 2 {
			t.Fatalf("DeleteExpiredOAuthFlows = %d, want 2", n)
		}
		before := at(-2 * time.Hour) // none has expired then: only deletion hides them
		wantTake(t, s, flows[0].StateHash, before, nil)
		wantTake(t, s, flows[1].StateHash, before, nil)
		wantTake(t, s, flows[2].StateHash, before, &flows[2])
		wantTake(t, s, flows[3].StateHash, epoch, &flows[3])
		n, err = s.DeleteExpiredOAuthFlows(t.Context(), at(time.Hour))
		wantErr(t, "DeleteExpiredOAuthFlows of an empty store", err, nil)
		if n != 0 {
			t.Fatalf("DeleteExpiredOAuthFlows after taking every flow = %d, want 0", n)
		}
	})
}
