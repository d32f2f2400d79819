package storagetest

import (
	"testing"

	"github.com/gatehouse-auth/gatehouse/storage"
)

func testUsers(t *testing.T, o Opener) {
	t.Run("CreateAndRead", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		got, err := s.UserByID(t.Context(), u.ID)
		wantErr(t, "UserByID", err, nil)
		wantEqual(t, "UserByID", got, u)
		got, err = s.UserByEmail(t.Context(), u.Email)
		wantErr(t, "UserByEmail", err, nil)
		wantEqual(t, "UserByEmail", got, u)
	})

	t.Run("DisabledAndEpochKept", func(t *testing.T) {
		s := o.newStore(t)
		u := userRecord(1)
		u.Disabled, u.Epoch = true, 42
		wantErr(t, "CreateUser", s.CreateUser(t.Context(), u), nil)
		got, err := s.UserByID(t.Context(), u.ID)
		wantErr(t, "UserByID", err, nil)
		wantEqual(t, "UserByID", got, u)
	})

	t.Run("EmailStoredNormalized", func(t *testing.T) {
		s := o.newStore(t)
		u := userRecord(1)
		u.Email = "  Alice.Smith@Example.COM\t"
		wantErr(t, "CreateUser", s.CreateUser(t.Context(), u), nil)
		got, err := s.UserByID(t.Context(), u.ID)
		wantErr(t, "UserByID", err, nil)
		if got.Email != "alice.smith@example.com" {
			t.Fatalf("stored email %q, want %q", got.Email, "alice.smith@example.com")
		}
	})

	t.Run("UserByEmailNormalizes", func(t *testing.T) {
		s := o.newStore(t)
		u := userRecord(1)
		u.Email = "alice@example.com"
		wantErr(t, "CreateUser", s.CreateUser(t.Context(), u), nil)
		for _, tc := range []struct {
			email string
			want  error
		}{
			{"alice@example.com", nil},
			{"ALICE@EXAMPLE.COM", nil},
			{"  Alice@Example.com \n", nil},
			{"alice@example.co", storage.ErrNotFound},
			{"bob@example.com", storage.ErrNotFound},
			{"", storage.ErrNotFound},
		} {
			got, err := s.UserByEmail(t.Context(), tc.email)
			wantErr(t, "UserByEmail("+tc.email+")", err, tc.want)
			if tc.want == nil && got.ID != u.ID {
				t.Fatalf("UserByEmail(%q) = user %q, want %q", tc.email, got.ID, u.ID)
			}
		}
	})

	t.Run("EmailUnique", func(t *testing.T) {
		s := o.newStore(t)
		first := createUser(t, s, 1)
		for _, email := range []string{first.Email, "USER1@example.com", " user1@EXAMPLE.com "} {
			second := userRecord(2)
			second.Email = email
			err := s.CreateUser(t.Context(), second)
			wantErr(t, "CreateUser with "+email, err, storage.ErrEmailTaken)
			_, err = s.UserByID(t.Context(), second.ID)
			wantErr(t, "UserByID of the refused user", err, storage.ErrNotFound)
		}
		got, err := s.UserByEmail(t.Context(), first.Email)
		wantErr(t, "UserByEmail", err, nil)
		if got.ID != first.ID {
			t.Fatalf("email now belongs to %q, want %q", got.ID, first.ID)
		}
	})

	t.Run("UnknownUser", func(t *testing.T) {
		s := o.newStore(t)
		createUser(t, s, 1)
		_, err := s.UserByID(t.Context(), userRecord(2).ID)
		wantErr(t, "UserByID", err, storage.ErrNotFound)
		_, err = s.UserByID(t.Context(), "")
		wantErr(t, "UserByID(\"\")", err, storage.ErrNotFound)
		_, err = s.SetPasswordHash(t.Context(), userRecord(2).ID, "$argon2id$x")
		wantErr(t, "SetPasswordHash", err, storage.ErrNotFound)
	})

	t.Run("ListUsers", func(t *testing.T) {
		s := o.newStore(t)
		users, err := s.ListUsers(t.Context())
		wantErr(t, "ListUsers", err, nil)
		if len(users) != 0 {
			t.Fatalf("ListUsers of an empty store: %d users", len(users))
		}
		want := map[string]storage.User{}
		for n := range 5 {
			u := createUser(t, s, n)
			want[u.ID] = u
		}
		users, err = s.ListUsers(t.Context())
		wantErr(t, "ListUsers", err, nil)
		if len(users) != len(want) {
			t.Fatalf("ListUsers: %d users, want %d", len(users), len(want))
		}
		for _, u := range users {
			wantEqual(t, "listed user", u, want[u.ID])
		}
	})

	t.Run("SetPasswordHash", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		other := createUser(t, s, 2)
		_, err := s.SetPasswordHash(t.Context(), u.ID, "$argon2id$new")
		wantErr(t, "SetPasswordHash", err, nil)
		got, err := s.UserByID(t.Context(), u.ID)
		wantErr(t, "UserByID", err, nil)
		u.PasswordHash = "$argon2id$new"
		u.Epoch++ // a credential change
		wantEqual(t, "user after SetPasswordHash", got, u)
		got, err = s.UserByEmail(t.Context(), u.Email)
		wantErr(t, "UserByEmail", err, nil)
		wantEqual(t, "user by email after SetPasswordHash", got, u)
		got, err = s.UserByID(t.Context(), other.ID)
		wantErr(t, "UserByID(other)", err, nil)
		wantEqual(t, "other user", got, other)
	})
}
