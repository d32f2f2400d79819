package assertion

import (
	"slices"
	"testing"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// The amr claim lists every factor the session was made with, and mfa for two.
func TestAssertionAMRListsFactors(t *testing.T) {
	e := newEnv(t)
	for i, c := range []struct {
		method, second string
		want           []string
	}{
		{storage.MethodPassword, "", []string{"pwd"}},
		{storage.MethodPassword, storage.MethodTOTP, []string{"pwd", "otp", "mfa"}},
		{storage.MethodPassword, storage.MethodRecoveryCode, []string{"pwd", "rec", "mfa"}},
		{storage.MethodPasskey, "", []string{"hwk", "mfa"}},
		{"github", storage.MethodPasskey, []string{"github", "hwk", "mfa"}},
	} {
		s := session(byte(i + 1))
		s.Method, s.SecondFactor = c.method, c.second
		token, err := e.issuer.Token(s)
		if err != nil {
			t.Fatal(err)
		}
		claims, err := verify(t, e.jwks.URL, token, e.clock.Now())
		if err != nil {
			t.Fatalf("verify: %v", err)
		}
		if !slices.Equal(claims.AMR, c.want) {
			t.Errorf("amr of a %s+%q session: %q, want %q", c.method, c.second, claims.AMR, c.want)
		}
	}
}
