package postgres_test

import (
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// A provider check through replica A that changes a session's groups, or a
// back-channel logout that ends provider sessions, reaches replica B's
// cache within a second, as a revocation does.
func TestGrantChangesReachOtherReplicas(t *testing.T) {
	url := pg.NewDatabase(t)
	a, b := newReplica(t, url), newReplica(t, url)
	if !eventually(5*time.Second, func() bool { return a.cache.Live() && b.cache.Live() }) {
		t.Fatal("caches never became live")
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	if err := a.store.CreateUser(t.Context(), storage.User{ID: "u1", Email: "a@example.com", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	sess := storage.Session{IDHash: storage.HashSecret("provider session"), UserID: "u1", CreatedAt: now,
		ExpiresAt: now.Add(time.Hour), LastSeen: now, Method: "oidc", Groups: "oidc:admins,oidc:staff"}
	if err := a.store.CreateSession(t.Context(), sess); err != nil {
		t.Fatal(err)
	}
	g := storage.Grant{Session: sess.IDHash, UserID: "u1", Provider: "oidc", Subject: "idp#alice", SID: "sid-1", NextRefresh: now}
	if err := a.store.PutGrant(t.Context(), g); err != nil {
		t.Fatal(err)
	}
	groupsOnB := func() string {
		s, err := b.cache.Session(t.Context(), sess.IDHash)
		if err != nil {
			return "(none)"
		}
		return s.Groups
	}
	if got := groupsOnB(); got != sess.Groups { // B caches it
		t.Fatalf("B reads groups %q", got)
	}
	if err := a.cache.RefreshSession(t.Context(), sess.IDHash, "oidc:staff", nil, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if !eventually(time.Second, func() bool { return groupsOnB() == "oidc:staff" }) {
		t.Fatalf("a group removed through A: B still reads %q after a second", groupsOnB())
	}
	if _, err := a.cache.EndGrantSessions(t.Context(), "oidc", "", "sid-1"); err != nil {
		t.Fatal(err)
	}
	if !eventually(time.Second, func() bool { return !b.serves(t, sess.IDHash) }) {
		t.Fatal("a session ended by its sid through A: B still serves it after a second")
	}
}
