package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"
)

// postJSON posts v to url with c and decodes the answer into out (if set),
// returning the status.
func postJSON(t *testing.T, c *http.Client, url string, v, out any) int {
	t.Helper()
	body, _ := json.Marshal(v)
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

// Through the real wiring: a user enrols an authenticator app, signs in
// again with the password and a code, and the upstream's assertion says
// amr [pwd otp mfa]; with a recovery code [pwd rec mfa].
func TestAssertionAMRSecondFactorEndToEnd(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	addUser(t, db, "alice@example.com", testPassword)
	up, _ := echoUpstream(t)
	g := startGatehouse(t, db, "--upstream", up.URL)
	jwks := fetchJWKS(t, g.URL+"/auth/.well-known/jwks.json")
	amrOf := func(c *http.Client) []any {
		t.Helper()
		_, claims := verifyWith(t, jwks, upstreamAssertion(t, c, g), g.URL, g.URL)
		amr, _ := claims["amr"].([]any)
		return amr
	}

	c := newClient()
	login(t, c, g.URL, "alice@example.com", testPassword)
	var begun struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	if status := postJSON(t, c, g.URL+"/auth/account/totp", map[string]string{}, &begun); status != http.StatusOK {
		t.Fatalf("begin totp: %d", status)
	}
	code, _ := totp.GenerateCode(begun.Secret, time.Now())
	var confirmed struct {
		RecoveryCodes []string `json:"recovery_codes"`
	}
	if status := postJSON(t, c, g.URL+"/auth/account/totp/confirm", map[string]string{"id": begun.ID, "code": code}, &confirmed); status != http.StatusOK || len(confirmed.RecoveryCodes) != 10 {
		t.Fatalf("confirm totp: %d %v", status, confirmed)
	}

	for _, tc := range []struct {
		name   string
		answer map[string]string
		want   []any
	}{
		{"recovery code", map[string]string{"recovery_code": confirmed.RecoveryCodes[0]}, []any{"pwd", "rec", "mfa"}},
		{"code", nil, []any{"pwd", "otp", "mfa"}},
	} {
		c := newClient()
		var step struct {
			Required bool `json:"second_factor_required"`
		}
		if status := postJSON(t, c, g.URL+"/auth/login", map[string]string{"email": "alice@example.com", "password": testPassword}, &step); status != http.StatusOK || !step.Required {
			t.Fatalf("%s: password sign-in %d %+v", tc.name, status, step)
		}
		if tc.answer == nil {
			// The confirmation spent this 30-second step: wait for the next code.
			next := time.Now().Truncate(30 * time.Second).Add(30 * time.Second)
			code, _ = totp.GenerateCode(begun.Secret, next)
			tc.answer = map[string]string{"code": code}
		}
		if status := postJSON(t, c, g.URL+"/auth/2fa", tc.answer, nil); status != http.StatusOK {
			t.Fatalf("%s: POST /auth/2fa %d", tc.name, status)
		}
		if got := amrOf(c); !slices.Equal(got, tc.want) {
			t.Errorf("%s: amr %v, want %v", tc.name, got, tc.want)
		}
	}
}
