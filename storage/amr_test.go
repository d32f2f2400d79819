package storage

import (
	"slices"
	"testing"
)

func TestAMR(t *testing.T) {
	for _, c := range []struct {
		method, second string
		want           []string
		multi          bool
	}{
		{"", "", nil, false}, // made by v1: no guess
		{"pwd", "", []string{"pwd"}, false},
		{"github", "", []string{"github"}, false},
		{"pwd", "otp", []string{"pwd", "otp", "mfa"}, true},
		{"pwd", "rec", []string{"pwd", "rec", "mfa"}, true},
		{"pwd", "hwk", []string{"pwd", "hwk", "mfa"}, true},
		{"oidc", "otp", []string{"oidc", "otp", "mfa"}, true},
		{"hwk", "", []string{"hwk", "mfa"}, true}, // a passkey sign-in is two factors in one
	} {
		s := Session{Method: c.method, SecondFactor: c.second}
		if got := s.AMR(); !slices.Equal(got, c.want) {
			t.Errorf("AMR(%q, %q) = %q, want %q", c.method, c.second, got, c.want)
		}
		if got := s.MultiFactor(); got != c.multi {
			t.Errorf("MultiFactor(%q, %q) = %v, want %v", c.method, c.second, got, c.multi)
		}
	}
}
