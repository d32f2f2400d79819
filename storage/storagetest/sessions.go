package storagetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// wantSession fails unless the session under h is want (nil: not stored).
func wantSession(t *testing.T, s storage.Store, h storage.Hash, want *storage.Session) {
	t.Helper()
	got, err := s.Session(t.Context(), h)
	if want == nil {
		wantErr(t, "Session of a deleted or unknown id", err, storage.ErrNotFound)
		return
	}
	wantErr(t, "Session", err, nil)
	wantEqual(t, "Session", got, *want)
}

// wantDeleteUserSessions fails unless DeleteUserSessions reports want.
func wantDeleteUserSessions(t *testing.T, s storage.Store, userID string, want int) {
	t.Helper()
	n, err := s.DeleteUserSessions(t.Context(), userID)
	wantErr(t, "DeleteUserSessions", err, nil)
	if n != want {
		t.Fatalf("DeleteUserSessions(%s) = %d, want %d", userID, n, want)
	}
}

func testSessions(t *testing.T, o Opener) {
	t.Run("CreateAndRead", func(t *testing.T) {
		s := o.newStore(t)
		sess := sessionRecord("a", userRecord(1).ID, time.Hour, at(-time.Minute))
		wantErr(t, "CreateSession", s.CreateSession(t.Context(), withUser(t, s, sess)), nil)
		wantSession(t, s, sess.IDHash, &sess)
		wantSession(t, s, hashOf("session b"), nil)
	})

	t.Run("EveryFieldKept", func(t *testing.T) {
		s := o.newStore(t)
		sess := sessionRecord("full", userRecord(1).ID, time.Hour, at(-time.Minute))
		sess.Epoch, sess.Method, sess.Groups = 7, "github", "github:acme,github:acme/ops"
		sess.IP, sess.UserAgent = "2001:db8::1", "Mozilla/5.0 (X11; Linux x86_64)"
		withUser(t, s, sess)
		for range 7 { // the user's epoch to 7, the session's
			wantDeleteUserSessions(t, s, sess.UserID, 0)
		}
		wantErr(t, "CreateSession", s.CreateSession(t.Context(), sess), nil)
		wantSession(t, s, sess.IDHash, &sess)
	})

	t.Run("ExpiredStillReturned", func(t *testing.T) {
		// Expiry is the caller's decision: the lookup returns the record.
		s := o.newStore(t)
		sess := sessionRecord("old", userRecord(1).ID, -time.Hour, at(-2*time.Hour))
		wantErr(t, "CreateSession", s.CreateSession(t.Context(), withUser(t, s, sess)), nil)
		wantSession(t, s, sess.IDHash, &sess)
	})

	t.Run("DeleteSession", func(t *testing.T) {
		s := o.newStore(t)
		uid := userRecord(1).ID
		a := sessionRecord("a", uid, time.Hour, epoch)
		b := sessionRecord("b", uid, time.Hour, epoch)
		createSessions(t, s, []storage.Session{a, b})
		wantErr(t, "DeleteSession", s.DeleteSession(t.Context(), a.IDHash), nil)
		wantSession(t, s, a.IDHash, nil)
		wantSession(t, s, b.IDHash, &b)
		wantErr(t, "DeleteSession again", s.DeleteSession(t.Context(), a.IDHash), nil)
		wantErr(t, "DeleteSession unknown", s.DeleteSession(t.Context(), hashOf("never")), nil)
		wantDeleteUserSessions(t, s, uid, 1) // the index forgot a
		n, err := s.DeleteExpiredSessions(t.Context(), at(2*time.Hour), 0)
		wantErr(t, "DeleteExpiredSessions", err, nil)
		if n != 0 {
			t.Fatalf("DeleteExpiredSessions after deleting all: %d, want 0", n)
		}
	})

	t.Run("DeleteUserSessions", func(t *testing.T) {
		s := o.newStore(t)
		// "abc" starts with "ab": a prefix scan must not take the other user's sessions.
		users := map[string]int{"ab": 3, "abc": 2, "b": 1, userRecord(1).ID: 4}
		byUser := map[string][]storage.Session{}
		var all []storage.Session
		for uid, count := range users {
			for i := range count {
				sess := sessionRecord(fmt.Sprint(uid, "-", i), uid, time.Hour, epoch)
				byUser[uid] = append(byUser[uid], sess)
				all = append(all, sess)
			}
		}
		createSessions(t, s, all)
		wantDeleteUserSessions(t, s, "ab", 3)
		for uid, sessions := range byUser {
			for _, sess := range sessions {
				if uid == "ab" {
					wantSession(t, s, sess.IDHash, nil)
				} else {
					wantSession(t, s, sess.IDHash, &sess)
				}
			}
		}
		wantDeleteUserSessions(t, s, "ab", 0)
		wantDeleteUserSessions(t, s, "nobody", 0)
		wantDeleteUserSessions(t, s, "", 0)
		wantDeleteUserSessions(t, s, userRecord(1).ID, 4)
		n, err := s.DeleteExpiredSessions(t.Context(), at(2*time.Hour), 0)
		wantErr(t, "DeleteExpiredSessions", err, nil)
		if n != 3 { // abc's 2 and b's 1: deleted sessions left no expiry entries behind
			t.Fatalf("DeleteExpiredSessions = %d, want 3", n)
		}
	})

	t.Run("CreateSameHashKeepsIndexes", func(t *testing.T) {
		// A backend may replace the record or refuse the second one; either
		// way the per-user and expiry indexes must follow the stored record.
		s := o.newStore(t)
		first := sessionRecord("same", "user-a", time.Hour, epoch)
		second := first
		second.UserID, second.ExpiresAt = "user-b", at(3*time.Hour)
		wantErr(t, "CreateSession", s.CreateSession(t.Context(), withUser(t, s, first)), nil)
		replaced := s.CreateSession(t.Context(), withUser(t, s, second)) == nil
		stored, other := first, second
		if replaced {
			stored, other = second, first
		}
		wantSession(t, s, first.IDHash, &stored)
		n, err := s.DeleteExpiredSessions(t.Context(), at(2*time.Hour), 0)
		wantErr(t, "DeleteExpiredSessions", err, nil)
		if want := map[bool]int{true: 0, false: 1}[replaced]; n != want {
			t.Fatalf("DeleteExpiredSessions between the two expiries = %d, want %d (replaced: %v)", n, want, replaced)
		}
		if n == 0 {
			wantDeleteUserSessions(t, s, other.UserID, 0)
			wantDeleteUserSessions(t, s, stored.UserID, 1)
		}
		wantSession(t, s, first.IDHash, nil)
	})

	t.Run("TouchSessions", func(t *testing.T) {
		s := o.newStore(t)
		uid := userRecord(1).ID
		a := sessionRecord("a", uid, time.Hour, at(-time.Hour))
		b := sessionRecord("b", uid, time.Hour, at(-time.Hour))
		createSessions(t, s, []storage.Session{a, b})
		wantErr(t, "TouchSessions(empty)", s.TouchSessions(t.Context(), nil), nil)
		unknown := hashOf("unknown")
		err := s.TouchSessions(t.Context(), map[storage.Hash]time.Time{a.IDHash: epoch, unknown: epoch})
		wantErr(t, "TouchSessions", err, nil)
		a.LastSeen = epoch
		wantSession(t, s, a.IDHash, &a)
		wantSession(t, s, b.IDHash, &b)
		wantSession(t, s, unknown, nil) // skipped, not created
	})
}

func testSessionSweep(t *testing.T, o Opener) {
	// Each case is a session and whether it survives a sweep at epoch with
	// the given idle limit; the answer must agree with storage.Session.Active.
	cases := []struct {
		name     string
		expires  time.Duration
		lastSeen time.Time
		idle     time.Duration
		survives bool
	}{
		{"active", time.Hour, at(-time.Minute), 30 * time.Minute, true},
		{"expired", -time.Second, at(-time.Minute), 30 * time.Minute, false},
		{"expires now", 0, at(-time.Minute), 30 * time.Minute, false},
		{"expires in 1µs", time.Microsecond, at(-time.Minute), 30 * time.Minute, true},
		{"idle too long", time.Hour, at(-31 * time.Minute), 30 * time.Minute, false},
		{"idle exactly the limit", time.Hour, at(-30 * time.Minute), 30 * time.Minute, false},
		{"idle just under the limit", time.Hour, at(-30*time.Minute + time.Microsecond), 30 * time.Minute, true},
		{"never seen", time.Hour, time.Time{}, 30 * time.Minute, false},
		{"idle but no idle limit", time.Hour, at(-100 * time.Hour), 0, true},
		{"expired, no idle limit", -time.Hour, epoch, 0, false},
	}
	for _, idle := range []time.Duration{0, 30 * time.Minute} {
		t.Run("idle="+idle.String(), func(t *testing.T) {
			s := o.newStore(t)
			var sessions []storage.Session
			wantDeleted := 0
			for _, tc := range cases {
				if tc.idle != idle {
					continue
				}
				sess := sessionRecord(tc.name, userRecord(1).ID, tc.expires, tc.lastSeen)
				if sess.Active(epoch, idle) != tc.survives {
					t.Fatalf("%s: test case disagrees with Session.Active", tc.name)
				}
				if !tc.survives {
					wantDeleted++
				}
				sessions = append(sessions, sess)
			}
			createSessions(t, s, sessions)
			n, err := s.DeleteExpiredSessions(t.Context(), epoch, idle)
			wantErr(t, "DeleteExpiredSessions", err, nil)
			if n != wantDeleted {
				t.Fatalf("DeleteExpiredSessions = %d, want %d", n, wantDeleted)
			}
			for i, sess := range sessions {
				_, err := s.Session(t.Context(), sess.IDHash)
				if survived := err == nil; survived != sess.Active(epoch, idle) {
					t.Fatalf("session %d survived: %v, want %v (err %v)", i, survived, !survived, err)
				}
			}
			wantDeleteUserSessions(t, s, userRecord(1).ID, len(sessions)-wantDeleted)
		})
	}

	t.Run("TouchedSurvivesIdleSweep", func(t *testing.T) {
		s := o.newStore(t)
		a := sessionRecord("a", userRecord(1).ID, time.Hour, at(-time.Hour))
		createSessions(t, s, []storage.Session{a})
		wantErr(t, "TouchSessions", s.TouchSessions(t.Context(), map[storage.Hash]time.Time{a.IDHash: epoch}), nil)
		n, err := s.DeleteExpiredSessions(t.Context(), epoch, 30*time.Minute)
		wantErr(t, "DeleteExpiredSessions", err, nil)
		if n != 0 {
			t.Fatalf("DeleteExpiredSessions removed a touched session: %d", n)
		}
		a.LastSeen = epoch
		wantSession(t, s, a.IDHash, &a)
	})

	t.Run("Many", func(t *testing.T) {
		// More than one sweep chunk of each kind, mixed with active sessions.
		s := o.newStore(t)
		const expired, idled, active = 12_000, 6_000, 500
		var sessions []storage.Session
		for i := range expired + idled + active {
			sess := sessionRecord(fmt.Sprint("many ", i), userRecord(i%50).ID, time.Hour, epoch)
			switch {
			case i < expired:
				sess.ExpiresAt = at(-time.Duration(i) * time.Second)
			case i < expired+idled:
				sess.LastSeen = at(-time.Hour - time.Duration(i)*time.Millisecond)
			}
			sessions = append(sessions, sess)
		}
		createSessions(t, s, sessions)
		n, err := s.DeleteExpiredSessions(t.Context(), epoch, 0)
		wantErr(t, "DeleteExpiredSessions without idle limit", err, nil)
		if n != expired {
			t.Fatalf("DeleteExpiredSessions without idle limit = %d, want %d", n, expired)
		}
		wantSession(t, s, sessions[expired].IDHash, &sessions[expired])
		n, err = s.DeleteExpiredSessions(t.Context(), epoch, 30*time.Minute)
		wantErr(t, "DeleteExpiredSessions", err, nil)
		if n != idled {
			t.Fatalf("DeleteExpiredSessions with idle limit = %d, want %d", n, idled)
		}
		for _, i := range []int{0, expired - 1, expired, expired + idled - 1} {
			wantSession(t, s, sessions[i].IDHash, nil)
		}
		for _, i := range []int{expired + idled, len(sessions) - 1} {
			wantSession(t, s, sessions[i].IDHash, &sessions[i])
		}
		total := 0
		for u := range 50 {
			n, err := s.DeleteUserSessions(t.Context(), userRecord(u).ID)
			wantErr(t, "DeleteUserSessions", err, nil)
			total += n
		}
		if total != active {
			t.Fatalf("sessions left in the per-user index: %d, want %d", total, active)
		}
	})
}
