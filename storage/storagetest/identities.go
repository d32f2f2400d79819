package storagetest

import (
	"errors"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

func identityRecord(provider, subject, userID string) storage.Identity {
	return storage.Identity{
		Provider:  provider,
		Subject:   subject,
		Email:     subject + "@" + provider + ".example",
		UserID:    userID,
		CreatedAt: at(-time.Minute),
	}
}

// wantLinked fails unless the provider account signs in as userID ("" : as nobody).
func wantLinked(t *testing.T, s storage.Store, provider, subject, userID string) {
	t.Helper()
	u, err := s.UserByIdentity(t.Context(), provider, subject)
	if userID == "" {
		wantErr(t, "UserByIdentity("+provider+", "+subject+")", err, storage.ErrNotFound)
		return
	}
	wantErr(t, "UserByIdentity("+provider+", "+subject+")", err, nil)
	if u.ID != userID {
		t.Fatalf("UserByIdentity(%s, %s) = %q, want %q", provider, subject, u.ID, userID)
	}
}

// wantIdentities fails unless the user's identities are exactly want (any order).
func wantIdentities(t *testing.T, s storage.Store, userID string, want ...storage.Identity) {
	t.Helper()
	got, err := s.IdentitiesOfUser(t.Context(), userID)
	wantErr(t, "IdentitiesOfUser", err, nil)
	if len(got) != len(want) {
		t.Fatalf("IdentitiesOfUser: %d identities %+v, want %d", len(got), got, len(want))
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			if g.Provider == w.Provider && g.Subject == w.Subject {
				wantEqual(t, "identity", g, w)
				found = true
			}
		}
		if !found {
			t.Fatalf("IdentitiesOfUser: %s/%s missing from %+v", w.Provider, w.Subject, got)
		}
	}
}

// link links id as the link callback does: for a session of the user,
// made (once per user) at the user's current Epoch.
func link(t *testing.T, s storage.Store, id storage.Identity) error {
	t.Helper()
	u, err := s.UserByID(t.Context(), id.UserID)
	if err != nil {
		t.Fatalf("user %s of a link: %v", id.UserID, err)
	}
	sess := sessionRecord("linking "+u.ID, u.ID, time.Hour, epoch)
	sess.Epoch = u.Epoch
	if _, err := s.Session(t.Context(), sess.IDHash); errors.Is(err, storage.ErrNotFound) {
		if err := s.CreateSession(t.Context(), sess); err != nil {
			t.Fatalf("the session of a link: %v", err)
		}
	}
	return s.LinkIdentity(t.Context(), id, sess.IDHash)
}

func testIdentities(t *testing.T, o Opener) {
	t.Run("CreateUserWithIdentity", func(t *testing.T) {
		s := o.newStore(t)
		u := userRecord(1)
		u.PasswordHash = ""
		id := identityRecord("google", "108", "")
		wantErr(t, "CreateUserWithIdentity", s.CreateUserWithIdentity(t.Context(), u, id), nil)
		got, err := s.UserByIdentity(t.Context(), "google", "108")
		wantErr(t, "UserByIdentity", err, nil)
		wantEqual(t, "user by identity", got, u)
		id.UserID = u.ID
		wantIdentities(t, s, u.ID, id)
		wantLinked(t, s, "github", "108", "")
		wantLinked(t, s, "google", "1080", "")
	})

	t.Run("CreateUserWithIdentityRefused", func(t *testing.T) {
		for _, tc := range []struct {
			name     string
			email    string
			provider string
			subject  string
			want     error
		}{
			{"email taken", "USER1@example.com", "google", "new", storage.ErrEmailTaken},
			{"identity in use", "new@example.com", "github", "42", storage.ErrIdentityInUse},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := o.newStore(t)
				existing := createUser(t, s, 1)
				wantErr(t, "LinkIdentity", link(t, s, identityRecord("github", "42", existing.ID)), nil)
				u := userRecord(2)
				u.Email = tc.email
				err := s.CreateUserWithIdentity(t.Context(), u, identityRecord(tc.provider, tc.subject, ""))
				wantErr(t, "CreateUserWithIdentity", err, tc.want)
				_, err = s.UserByID(t.Context(), u.ID)
				wantErr(t, "UserByID of the refused user", err, storage.ErrNotFound)
				if tc.want == storage.ErrEmailTaken {
					wantLinked(t, s, tc.provider, tc.subject, "")
				} else {
					_, err = s.UserByEmail(t.Context(), tc.email)
					wantErr(t, "UserByEmail of the refused user", err, storage.ErrNotFound)
				}
				wantLinked(t, s, "github", "42", existing.ID)
				wantIdentities(t, s, u.ID)
			})
		}
	})

	t.Run("LinkIdentity", func(t *testing.T) {
		s := o.newStore(t)
		alice, bob := createUser(t, s, 1), createUser(t, s, 2)
		id := identityRecord("github", "42", alice.ID)
		wantErr(t, "LinkIdentity", link(t, s, id), nil)
		wantLinked(t, s, "github", "42", alice.ID)
		wantIdentities(t, s, alice.ID, id)

		again := id
		again.Email, again.CreatedAt = "changed@example.com", at(time.Hour)
		wantErr(t, "LinkIdentity again, same user", link(t, s, again), nil)
		wantIdentities(t, s, alice.ID, id) // nothing changed

		err := link(t, s, identityRecord("github", "42", bob.ID))
		wantErr(t, "LinkIdentity to another user", err, storage.ErrIdentityInUse)
		wantLinked(t, s, "github", "42", alice.ID)
		wantIdentities(t, s, bob.ID)

		google := identityRecord("google", "42", bob.ID)
		wantErr(t, "LinkIdentity same subject, other provider", link(t, s, google), nil)
		wantLinked(t, s, "google", "42", bob.ID)
		wantLinked(t, s, "github", "42", alice.ID)
	})

	t.Run("LinkSecondAccountOfProvider", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		first := identityRecord("github", "1", u.ID)
		wantErr(t, "LinkIdentity", link(t, s, first), nil)
		err := link(t, s, identityRecord("github", "2", u.ID))
		wantErr(t, "LinkIdentity of a second github account", err, storage.ErrIdentityInUse)
		wantLinked(t, s, "github", "2", "")
		wantIdentities(t, s, u.ID, first)
	})

	t.Run("LinkUnknownUser", func(t *testing.T) {
		s := o.newStore(t)
		err := s.LinkIdentity(t.Context(), identityRecord("github", "1", userRecord(9).ID), hashOf("no session"))
		wantErr(t, "LinkIdentity", err, storage.ErrNotFound)
		wantLinked(t, s, "github", "1", "")
	})

	t.Run("UnlinkIdentity", func(t *testing.T) {
		for _, tc := range []struct {
			name        string
			password    bool
			identities  []string // providers linked before
			unlink      string
			want        error
			wantRemains []string
		}{
			{"not linked", true, []string{"google"}, "github", storage.ErrNotLinked, []string{"google"}},
			{"nothing linked", true, nil, "github", storage.ErrNotLinked, nil},
			{"last method", false, []string{"google"}, "google", storage.ErrLastLoginMethod, []string{"google"}},
			{"password remains", true, []string{"google"}, "google", nil, nil},
			{"other identity remains", false, []string{"google", "github"}, "google", nil, []string{"github"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := o.newStore(t)
				u := userRecord(1)
				if !tc.password {
					u.PasswordHash = ""
				}
				wantErr(t, "CreateUser", s.CreateUser(t.Context(), u), nil)
				byProvider := map[string]storage.Identity{}
				for _, p := range tc.identities {
					byProvider[p] = identityRecord(p, "sub-"+p, u.ID)
					wantErr(t, "LinkIdentity", link(t, s, byProvider[p]), nil)
				}
				wantErr(t, "UnlinkIdentity", s.UnlinkIdentity(t.Context(), u.ID, tc.unlink), tc.want)
				var remains []storage.Identity
				for _, p := range tc.wantRemains {
					remains = append(remains, byProvider[p])
					wantLinked(t, s, p, "sub-"+p, u.ID)
				}
				wantIdentities(t, s, u.ID, remains...)
				if tc.want == nil {
					wantLinked(t, s, tc.unlink, "sub-"+tc.unlink, "")
				}
			})
		}
	})

	t.Run("UserIDPrefixOfAnother", func(t *testing.T) {
		// "ab" starts "abc": the user's rows must not include the other user's.
		s := o.newStore(t)
		ab, abc := userRecord(1), userRecord(2)
		ab.ID, abc.ID = "ab", "abc"
		for _, u := range []storage.User{ab, abc} {
			wantErr(t, "CreateUser", s.CreateUser(t.Context(), u), nil)
			wantErr(t, "LinkIdentity", link(t, s, identityRecord("google", "sub-"+u.ID, u.ID)), nil)
		}
		wantErr(t, "LinkIdentity github", link(t, s, identityRecord("github", "gh-abc", abc.ID)), nil)
		wantIdentities(t, s, ab.ID, identityRecord("google", "sub-ab", ab.ID))
		wantErr(t, "UnlinkIdentity", s.UnlinkIdentity(t.Context(), ab.ID, "google"), nil)
		wantIdentities(t, s, abc.ID, identityRecord("google", "sub-abc", abc.ID), identityRecord("github", "gh-abc", abc.ID))
	})

	t.Run("UnlinkKeepsOtherUsers", func(t *testing.T) {
		s := o.newStore(t)
		alice, bob := createUser(t, s, 1), createUser(t, s, 2)
		wantErr(t, "link alice", link(t, s, identityRecord("google", "a", alice.ID)), nil)
		wantErr(t, "link bob", link(t, s, identityRecord("google", "b", bob.ID)), nil)
		wantErr(t, "UnlinkIdentity", s.UnlinkIdentity(t.Context(), alice.ID, "google"), nil)
		wantLinked(t, s, "google", "a", "")
		wantLinked(t, s, "google", "b", bob.ID)
		err := s.UnlinkIdentity(t.Context(), alice.ID, "google")
		wantErr(t, "UnlinkIdentity twice", err, storage.ErrNotLinked)
	})
}
