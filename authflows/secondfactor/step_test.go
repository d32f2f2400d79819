package secondfactor

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

func TestStep(t *testing.T) {
	s := newStore(t)
	c := newClock()
	f := New(s, Config{Issuer: "Acme", Now: c.Now})
	u := newUser(t, s, "ada")
	u.Epoch = 7 // as read when the password was checked: the session must carry it
	binding, err := f.BeginStep(t.Context(), StepStart{User: u, Method: storage.MethodPassword, Redirect: "/after"})
	if err != nil {
		t.Fatal(err)
	}
	if len(binding) < 43 {
		t.Fatalf("step cookie value %q: too short to be 256 bits", binding)
	}
	// Reading leaves the step usable (a mistyped code can be tried again).
	for range 2 {
		st, err := f.Step(t.Context(), binding)
		if err != nil || st.UserID != u.ID || st.Method != storage.MethodPassword || st.Redirect != "/after" {
			t.Fatalf("Step: %+v, %v", st, err)
		}
	}
	for _, other := range []string{"", "another-browser", strings.Repeat("x", 500)} {
		if _, err := f.FinishStep(t.Context(), other); !errors.Is(err, ErrStepExpired) {
			t.Fatalf("FinishStep(%.20q): %v, want ErrStepExpired", other, err)
		}
	}
	st, err := f.FinishStep(t.Context(), binding)
	if err != nil || st.UserID != u.ID || st.Epoch != 7 || !st.ExpiresAt.Equal(c.Now().Add(DefaultStepTTL)) {
		t.Fatalf("FinishStep: %+v, %v", st, err)
	}
	if _, err := f.FinishStep(t.Context(), binding); !errors.Is(err, ErrStepExpired) {
		t.Fatalf("FinishStep twice: %v, want ErrStepExpired", err)
	}
}

func TestStepExpires(t *testing.T) {
	s := newStore(t)
	c := newClock()
	f := New(s, Config{Issuer: "Acme", Now: c.Now})
	u := newUser(t, s, "ada")
	binding, err := f.BeginStep(t.Context(), StepStart{User: u, Method: "github", Groups: "github:acme"})
	if err != nil {
		t.Fatal(err)
	}
	c.Add(DefaultStepTTL - time.Second)
	if _, err := f.Step(t.Context(), binding); err != nil {
		t.Fatalf("Step before 5 minutes: %v", err)
	}
	c.Add(time.Second)
	if _, err := f.Step(t.Context(), binding); !errors.Is(err, ErrStepExpired) {
		t.Fatalf("Step after 5 minutes: %v, want ErrStepExpired", err)
	}
	if _, err := f.FinishStep(t.Context(), binding); !errors.Is(err, ErrStepExpired) {
		t.Fatalf("FinishStep after 5 minutes: %v, want ErrStepExpired", err)
	}
}

func TestRecentSignIn(t *testing.T) {
	now := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, c := range []struct {
		age  time.Duration
		want bool
	}{{0, true}, {ReauthWindow, true}, {ReauthWindow + time.Second, false}, {time.Hour, false}} {
		if got := RecentSignIn(storage.Session{CreatedAt: now.Add(-c.age)}, now); got != c.want {
			t.Errorf("RecentSignIn(signed in %s ago) = %v, want %v", c.age, got, c.want)
		}
	}
}
