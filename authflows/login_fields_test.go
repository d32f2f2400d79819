package authflows

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/proxy/policy"
)

// A sign-in the access policy refuses had the right password: the page
// says "not allowed" without marking the email and password fields invalid
// (red, as if mistyped). A wrong password does mark them.
func TestLoginFieldsInvalidOnlyForWrongCredentials(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.Policy = newPolicy(t, policy.Rules{EmailDomains: []string{"corp.com"}}) })
	e.CreateUser(t, "ann@example.com", testPassword)
	post := func(pw string) string {
		resp := e.PostForm("/auth/login", url.Values{"email": {"ann@example.com"}, "password": {pw}})
		if resp.StatusCode == http.StatusSeeOther {
			t.Fatalf("signed in with %q", pw)
		}
		return e.Body(t, resp)
	}
	refused := post(testPassword)
	if !strings.Contains(refused, `role="alert"`) {
		t.Fatalf("no error on the page:\n%s", refused)
	}
	if strings.Contains(refused, "aria-invalid") {
		t.Errorf("the right password, refused by the policy, marks the fields invalid:\n%s", refused)
	}
	if wrong := post("not the password at all"); strings.Count(wrong, `aria-invalid="true"`) != 2 {
		t.Errorf("a wrong password does not mark both fields invalid:\n%s", wrong)
	}
}
