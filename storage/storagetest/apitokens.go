package storagetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// userToken returns an API token of user named name, made at created.
func userToken(name, userID string, created time.Duration) storage.APIToken {
	id := hashOf("id %s", name)
	return storage.APIToken{
		ID: fmt.Sprintf("%x", id[:8]), Hash: hashOf("token %s", name),
		Name: "token " + name, UserID: userID, CreatedAt: at(created),
	}
}

// serviceToken returns a service's API token named name, with groups.
func serviceToken(name, service string, created time.Duration, groups ...string) storage.APIToken {
	t := userToken(name, "", created)
	t.Service, t.Groups = service, groups
	return t
}

func createToken(t *testing.T, s storage.Store, tok storage.APIToken) {
	t.Helper()
	wantErr(t, "CreateAPIToken "+tok.Name, s.CreateAPIToken(t.Context(), tok), nil)
}

// wantToken fails unless the lookup of h finds want with owner (nil want: none).
func wantToken(t *testing.T, s storage.Store, h storage.Hash, want *storage.APIToken, owner storage.APITokenOwner) {
	t.Helper()
	got, gotOwner, err := s.APITokenByHash(t.Context(), h)
	if want == nil {
		wantErr(t, "APITokenByHash of a revoked, deleted or unknown token", err, storage.ErrNotFound)
		return
	}
	wantErr(t, "APITokenByHash", err, nil)
	wantEqual(t, "APITokenByHash", got, *want)
	wantEqual(t, "APITokenByHash owner", gotOwner, owner)
}

// wantTokens fails unless APITokens lists exactly want, in order.
func wantTokens(t *testing.T, s storage.Store, want ...storage.APIToken) {
	t.Helper()
	got, err := s.APITokens(t.Context())
	wantErr(t, "APITokens", err, nil)
	if len(got) != len(want) {
		t.Fatalf("APITokens: %d tokens %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		wantEqual(t, fmt.Sprintf("APITokens[%d]", i), got[i], want[i])
	}
}

func testAPITokens(t *testing.T, o Opener) {
	t.Run("CreateAndLookUp", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		mine := userToken("a", u.ID, -time.Hour)
		mine.ExpiresAt = at(24 * time.Hour)
		svc := serviceToken("b", "ci.deploy", -time.Minute, "oidc:deployers", "github:acme/ops")
		createToken(t, s, mine)
		createToken(t, s, svc)
		wantToken(t, s, mine.Hash, &mine, storage.APITokenOwner{Email: u.Email})
		wantToken(t, s, svc.Hash, &svc, storage.APITokenOwner{})
		wantToken(t, s, hashOf("token never made"), nil, storage.APITokenOwner{})
		// An expired token is still returned: expiry is the caller's decision.
		old := userToken("old", u.ID, -48*time.Hour)
		old.ExpiresAt = at(-time.Hour)
		createToken(t, s, old)
		wantToken(t, s, old.Hash, &old, storage.APITokenOwner{Email: u.Email})
		wantTokens(t, s, old, mine, svc)
	})

	t.Run("Refusals", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		orphan := userToken("orphan", "ffffffffffffffffffffffffffffffff", 0)
		wantErr(t, "CreateAPIToken of an unknown user", s.CreateAPIToken(t.Context(), orphan), storage.ErrNotFound)
		wantToken(t, s, orphan.Hash, nil, storage.APITokenOwner{})
		wantTokens(t, s)

		first := userToken("a", u.ID, 0)
		createToken(t, s, first)
		sameID := serviceToken("b", "svc", time.Minute)
		sameID.ID = first.ID
		if err := s.CreateAPIToken(t.Context(), sameID); err == nil {
			t.Fatal("CreateAPIToken with the ID of a stored token: no error")
		}
		sameHash := serviceToken("c", "svc", time.Minute)
		sameHash.Hash = first.Hash
		if err := s.CreateAPIToken(t.Context(), sameHash); err == nil {
			t.Fatal("CreateAPIToken with the hash of a stored token: no error")
		}
		wantToken(t, s, first.Hash, &first, storage.APITokenOwner{Email: u.Email})
		wantToken(t, s, sameID.Hash, nil, storage.APITokenOwner{})
		wantTokens(t, s, first)
	})

	t.Run("Revoke", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		a, b := userToken("a", u.ID, 0), serviceToken("b", "svc", time.Second, "oidc:x")
		createToken(t, s, a)
		createToken(t, s, b)
		got, err := s.RevokeAPIToken(t.Context(), b.ID)
		wantErr(t, "RevokeAPIToken", err, nil)
		wantEqual(t, "RevokeAPIToken", got, b)
		wantToken(t, s, b.Hash, nil, storage.APITokenOwner{})
		wantToken(t, s, a.Hash, &a, storage.APITokenOwner{Email: u.Email})
		wantTokens(t, s, a)
		_, err = s.RevokeAPIToken(t.Context(), b.ID)
		wantErr(t, "RevokeAPIToken again", err, storage.ErrNotFound)
		_, err = s.RevokeAPIToken(t.Context(), "0000000000000000")
		wantErr(t, "RevokeAPIToken of an unknown id", err, storage.ErrNotFound)
		// The hash of a revoked token may not come back (it will not: 256
		// random bits), but its ID is free again and a new token takes it.
		b2 := serviceToken("b2", "svc", time.Minute)
		b2.ID = b.ID
		createToken(t, s, b2)
		wantToken(t, s, b2.Hash, &b2, storage.APITokenOwner{})
	})

	t.Run("OwnerState", func(t *testing.T) {
		s := o.newStore(t)
		u, other := createUser(t, s, 1), createUser(t, s, 2)
		mine, theirs := userToken("a", u.ID, 0), userToken("b", other.ID, time.Second)
		svc := serviceToken("c", "svc", 2*time.Second)
		for _, tok := range []storage.APIToken{mine, theirs, svc} {
			createToken(t, s, tok)
		}
		// Sessions and passwords are not tokens: revoking the one keeps the other.
		wantDeleteUserSessions(t, s, u.ID, 0)
		_, err := s.SetPasswordHash(t.Context(), u.ID, "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA")
		wantErr(t, "SetPasswordHash", err, nil)
		wantToken(t, s, mine.Hash, &mine, storage.APITokenOwner{Email: u.Email})

		// Disabling keeps the token and reports the owner disabled; enabling
		// reports it enabled again.
		_, err = s.SetUserDisabled(t.Context(), u.ID, true)
		wantErr(t, "SetUserDisabled(true)", err, nil)
		wantToken(t, s, mine.Hash, &mine, storage.APITokenOwner{Email: u.Email, Disabled: true})
		wantToken(t, s, theirs.Hash, &theirs, storage.APITokenOwner{Email: other.Email})
		_, err = s.SetUserDisabled(t.Context(), u.ID, false)
		wantErr(t, "SetUserDisabled(false)", err, nil)
		wantToken(t, s, mine.Hash, &mine, storage.APITokenOwner{Email: u.Email})

		// Deleting the user deletes its tokens, and only its tokens.
		wantErr(t, "DeleteUser", s.DeleteUser(t.Context(), u.ID), nil)
		wantToken(t, s, mine.Hash, nil, storage.APITokenOwner{})
		wantToken(t, s, theirs.Hash, &theirs, storage.APITokenOwner{Email: other.Email})
		wantToken(t, s, svc.Hash, &svc, storage.APITokenOwner{})
		wantTokens(t, s, theirs, svc)
		_, err = s.RevokeAPIToken(t.Context(), mine.ID)
		wantErr(t, "RevokeAPIToken of a deleted user's token", err, storage.ErrNotFound)
	})

	t.Run("Touch", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		a, b := userToken("a", u.ID, 0), serviceToken("b", "svc", time.Second, "oidc:x")
		createToken(t, s, a)
		createToken(t, s, b)
		wantErr(t, "TouchAPITokens of nothing", s.TouchAPITokens(t.Context(), nil), nil)
		err := s.TouchAPITokens(t.Context(), map[storage.Hash]time.Time{
			a.Hash: at(time.Minute), hashOf("token never made"): at(time.Minute),
		})
		wantErr(t, "TouchAPITokens", err, nil)
		a.LastUsed = at(time.Minute)
		wantToken(t, s, a.Hash, &a, storage.APITokenOwner{Email: u.Email})
		wantToken(t, s, b.Hash, &b, storage.APITokenOwner{})
		wantToken(t, s, hashOf("token never made"), nil, storage.APITokenOwner{})
		wantErr(t, "TouchAPITokens", s.TouchAPITokens(t.Context(), map[storage.Hash]time.Time{b.Hash: at(2 * time.Minute)}), nil)
		b.LastUsed = at(2 * time.Minute)
		// Another replica's older time never moves LastUsed back.
		wantErr(t, "TouchAPITokens, older", s.TouchAPITokens(t.Context(), map[storage.Hash]time.Time{a.Hash: at(time.Second)}), nil)
		wantTokens(t, s, a, b)
	})
}

// Reopener opens a fresh, empty store and returns it with a function that
// opens the same data again (called after the first store is closed).
type Reopener func(t *testing.T) (first storage.Store, reopen func(t *testing.T) storage.Store)

// RunReopen runs the tests of what a store keeps across a close and a
// reopen, as across a restart of the server.
func RunReopen(t *testing.T, open Reopener) {
	t.Run("APITokensSurviveReopen", func(t *testing.T) {
		s, reopen := open(t)
		first := s
		t.Cleanup(func() { _ = first.Close() })
		u := createUser(t, s, 1)
		mine := userToken("a", u.ID, 0)
		mine.ExpiresAt = at(time.Hour)
		svc := serviceToken("b", "svc", time.Second, "oidc:x", "svc:y")
		gone := serviceToken("c", "svc", 2*time.Second)
		for _, tok := range []storage.APIToken{mine, svc, gone} {
			createToken(t, s, tok)
		}
		wantErr(t, "TouchAPITokens", s.TouchAPITokens(t.Context(), map[storage.Hash]time.Time{svc.Hash: at(time.Minute)}), nil)
		svc.LastUsed = at(time.Minute)
		_, err := s.RevokeAPIToken(t.Context(), gone.ID)
		wantErr(t, "RevokeAPIToken", err, nil)
		wantErr(t, "Close", s.Close(), nil)

		s = reopen(t)
		t.Cleanup(func() { _ = s.Close() })
		wantTokens(t, s, mine, svc)
		wantToken(t, s, mine.Hash, &mine, storage.APITokenOwner{Email: u.Email})
		wantToken(t, s, svc.Hash, &svc, storage.APITokenOwner{})
		wantToken(t, s, gone.Hash, nil, storage.APITokenOwner{})
	})
}
