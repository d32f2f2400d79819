package storagetest

import (
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// grantOf stores a session of user named name (expiring in a day) with a
// grant of provider, subject and sid, due at due, and returns the grant.
func grantOf(t *testing.T, s storage.Store, name, userID, provider, subject, sid string, due time.Duration) storage.Grant {
	t.Helper()
	sess := withUser(t, s, sessionRecord(name, userID, 24*time.Hour, at(0)))
	sess.Method, sess.Groups = provider, provider+":before"
	wantErr(t, "CreateSession "+name, s.CreateSession(t.Context(), sess), nil)
	g := storage.Grant{Session: sess.IDHash, UserID: userID, Provider: provider, Subject: subject, SID: sid,
		Tokens: []byte("sealed " + name), NextRefresh: at(due)}
	wantErr(t, "PutGrant "+name, s.PutGrant(t.Context(), g), nil)
	return g
}

func wantGrant(t *testing.T, s storage.Store, h storage.Hash, want *storage.Grant) {
	t.Helper()
	got, err := s.GrantOf(t.Context(), h)
	if want == nil {
		wantErr(t, "GrantOf a session without one", err, storage.ErrNotFound)
		return
	}
	wantErr(t, "GrantOf", err, nil)
	wantEqual(t, "GrantOf", got, *want)
}

func testGrants(t *testing.T, o Opener) {
	ctx := t.Context()
	t.Run("PutNeedsSession", func(t *testing.T) {
		s := o.newStore(t)
		err := s.PutGrant(ctx, storage.Grant{Session: hashOf("no such session"), UserID: "u1", Provider: "oidc", NextRefresh: at(0)})
		wantErr(t, "PutGrant without a session", err, storage.ErrNotFound)
		g := grantOf(t, s, "a", "u1", "oidc", "https://idp#sub-a", "sid-a", time.Hour)
		wantGrant(t, s, g.Session, &g)
		g.Tokens, g.SID = []byte("sealed again"), "sid-b"
		wantErr(t, "PutGrant again", s.PutGrant(ctx, g), nil)
		wantGrant(t, s, g.Session, &g)
	})
	t.Run("GoesWithSession", func(t *testing.T) {
		s := o.newStore(t)
		one := grantOf(t, s, "one", "u1", "google", "g1", "", 0)
		wantErr(t, "DeleteSession", s.DeleteSession(ctx, one.Session), nil)
		wantGrant(t, s, one.Session, nil)

		keep := grantOf(t, s, "keep", "u2", "github", "gh2", "", 0)
		other := grantOf(t, s, "other", "u2", "github", "gh2", "", 0)
		if _, err := s.DeleteOtherSessions(ctx, "u2", keep.Session); err != nil {
			t.Fatalf("DeleteOtherSessions: %v", err)
		}
		wantGrant(t, s, keep.Session, &keep)
		wantGrant(t, s, other.Session, nil)
		wantDeleteUserSessions(t, s, "u2", 1)
		wantGrant(t, s, keep.Session, nil)

		gone := grantOf(t, s, "gone", "u3", "oidc", "o3", "", 0)
		wantErr(t, "DeleteUser", s.DeleteUser(ctx, "u3"), nil)
		wantGrant(t, s, gone.Session, nil)

		expired := grantOf(t, s, "expired", "u4", "oidc", "o4", "", 0)
		if _, err := s.DeleteExpiredSessions(ctx, at(25*time.Hour), 0); err != nil {
			t.Fatalf("DeleteExpiredSessions: %v", err)
		}
		wantGrant(t, s, expired.Session, nil)
		if got, err := s.ClaimDueGrants(ctx, at(48*time.Hour), at(49*time.Hour), 10); err != nil || len(got) != 0 {
			t.Fatalf("ClaimDueGrants after every session went: %d grants, %v", len(got), err)
		}
	})
	t.Run("Claim", func(t *testing.T) {
		s := o.newStore(t)
		late := grantOf(t, s, "late", "u1", "google", "g1", "", 2*time.Minute)
		early := grantOf(t, s, "early", "u1", "google", "g1", "", 0)
		middle := grantOf(t, s, "middle", "u2", "github", "gh2", "", time.Minute)
		got, err := s.ClaimDueGrants(ctx, at(time.Minute), at(10*time.Minute), 10)
		wantErr(t, "ClaimDueGrants", err, nil)
		early.NextRefresh, middle.NextRefresh = at(10*time.Minute), at(10*time.Minute)
		wantEqual(t, "ClaimDueGrants at 1m", got, []storage.Grant{early, middle})
		wantGrant(t, s, early.Session, &early)
		// Held until 10m: another claim before then takes only what fell due since.
		got, err = s.ClaimDueGrants(ctx, at(5*time.Minute), at(15*time.Minute), 10)
		wantErr(t, "ClaimDueGrants", err, nil)
		if len(got) != 1 || got[0].Session != late.Session {
			t.Fatalf("second claim at 5m: %d grants, want only the one due at 2m", len(got))
		}
		got, err = s.ClaimDueGrants(ctx, at(10*time.Minute), at(20*time.Minute), 1)
		wantErr(t, "ClaimDueGrants", err, nil)
		if len(got) != 1 {
			t.Fatalf("claim with limit 1 after the hold ended: %d grants", len(got))
		}
	})
	t.Run("ClaimOnce", func(t *testing.T) {
		s := o.newStore(t)
		const n = 40
		for i := range n {
			grantOf(t, s, "g"+string(rune('a'+i)), "u1", "oidc", "o1", "", 0)
		}
		var mu sync.Mutex
		seen := map[storage.Hash]int{}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				got, err := s.ClaimDueGrants(ctx, at(0), at(time.Hour), 7)
				if err != nil {
					t.Errorf("concurrent ClaimDueGrants: %v", err)
				}
				mu.Lock()
				for _, g := range got {
					seen[g.Session]++
				}
				mu.Unlock()
			})
		}
		wg.Wait()
		for h, count := range seen {
			if count > 1 {
				t.Errorf("grant %x claimed %d times by concurrent claims", h[:4], count)
			}
		}
	})
	t.Run("Refresh", func(t *testing.T) {
		s := o.newStore(t)
		g := grantOf(t, s, "r", "u1", "oidc", "o1", "sid", 0)
		wantErr(t, "RefreshSession", s.RefreshSession(ctx, g.Session, "oidc:after", nil, at(time.Hour)), nil)
		sess, err := s.Session(ctx, g.Session)
		wantErr(t, "Session", err, nil)
		if sess.Groups != "oidc:after" {
			t.Errorf("groups after RefreshSession: %q", sess.Groups)
		}
		g.NextRefresh = at(time.Hour)
		wantGrant(t, s, g.Session, &g) // nil tokens: kept
		wantErr(t, "RefreshSession", s.RefreshSession(ctx, g.Session, "", []byte("new sealed"), at(2*time.Hour)), nil)
		g.Tokens, g.NextRefresh = []byte("new sealed"), at(2*time.Hour)
		wantGrant(t, s, g.Session, &g)
		wantErr(t, "RefreshSession of a session that went", s.RefreshSession(ctx, hashOf("gone"), "x", nil, at(0)), storage.ErrNotFound)
	})
	t.Run("End", func(t *testing.T) {
		s := o.newStore(t)
		a1 := grantOf(t, s, "a1", "u1", "oidc", "idp#alice", "sid-1", 0)
		a2 := grantOf(t, s, "a2", "u1", "oidc", "idp#alice", "sid-2", 0)
		b := grantOf(t, s, "b", "u2", "oidc", "idp#bob", "sid-3", 0)
		g := grantOf(t, s, "g", "u1", "google", "idp#alice", "sid-1", 0)
		ended, err := s.EndGrantSessions(ctx, "oidc", "", "sid-1")
		wantErr(t, "EndGrantSessions by sid", err, nil)
		wantEqual(t, "EndGrantSessions by sid", ended, []storage.Grant{a1})
		wantSession(t, s, a1.Session, nil)
		wantGrant(t, s, a2.Session, &a2)
		wantGrant(t, s, g.Session, &g)
		ended, err = s.EndGrantSessions(ctx, "oidc", "idp#alice", "")
		wantErr(t, "EndGrantSessions by subject", err, nil)
		wantEqual(t, "EndGrantSessions by subject", ended, []storage.Grant{a2})
		wantGrant(t, s, b.Session, &b)
		wantGrant(t, s, g.Session, &g)
		ended, err = s.EndGrantSessions(ctx, "oidc", "idp#nobody", "")
		if err != nil || len(ended) != 0 {
			t.Fatalf("EndGrantSessions of nobody: %v, %v", ended, err)
		}
		if _, err := s.EndGrantSessions(ctx, "oidc", "", ""); err == nil {
			t.Fatal("EndGrantSessions without subject or sid ended something or did not refuse")
		}
	})
	t.Run("UseOnce", func(t *testing.T) {
		s := o.newStore(t)
		key := hashOf("jti 1")
		for _, tc := range []struct {
			now  time.Duration
			want bool
		}{{0, true}, {time.Minute, false}, {5*time.Minute - time.Microsecond, false}, {5 * time.Minute, true}, {6 * time.Minute, false}} {
			first, err := s.UseOnce(ctx, key, at(tc.now), at(tc.now+5*time.Minute))
			wantErr(t, "UseOnce", err, nil)
			if first != tc.want { // a repeat within the mark's time is refused; after it, accepted again
				t.Fatalf("UseOnce at %s: %v, want %v", tc.now, first, tc.want)
			}
		}
		// A mark until now is past at once: a look that leaves the key free
		// (back-channel logout looks before it ends sessions, marks after).
		probe := hashOf("jti probed")
		for range 2 {
			if first, err := s.UseOnce(ctx, probe, at(time.Minute), at(time.Minute)); err != nil || !first {
				t.Fatalf("UseOnce until now of a free key: %v %v, want true", first, err)
			}
		}
		if first, _ := s.UseOnce(ctx, probe, at(time.Minute), at(2*time.Minute)); !first {
			t.Fatal("a key looked at (until now) was taken")
		}
		if first, _ := s.UseOnce(ctx, probe, at(time.Minute), at(time.Minute)); first {
			t.Fatal("a look at a marked key found it free")
		}
		if first, _ := s.UseOnce(ctx, hashOf("jti 2"), at(time.Minute), at(2*time.Minute)); !first {
			t.Fatal("UseOnce of another key refused")
		}
		if _, err := s.DeleteExpiredSessions(ctx, at(time.Hour), 0); err != nil {
			t.Fatalf("sweep: %v", err)
		}
		if first, _ := s.UseOnce(ctx, hashOf("jti 2"), at(time.Hour), at(2*time.Hour)); !first {
			t.Fatal("UseOnce after the mark expired and was swept: refused")
		}
	})
}
