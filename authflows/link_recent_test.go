package authflows

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
)

// MF3: linking and unlinking a provider account need a sign-in within the
// last 10 minutes, as the factor endpoints do: an old session (a stolen
// cookie) cannot attach its holder's own provider account and keep access
// by it. An API client gets 401 reauthentication_required, a page a 303 to
// sign in again that comes back to the account page; nothing changes.
func TestLinkAndUnlinkNeedARecentSignIn(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	u := e.newUser("kim@example.com", true)
	b := e.newBrowser()
	b.signIn(u)
	e.github.SetNext(oauthtest.Account{Subject: "77", Email: "kim@example.com", EmailVerified: true})
	if a := b.flow("/auth/link/github"); a.status != http.StatusSeeOther {
		t.Fatalf("link with a fresh sign-in: %d %s", a.status, a.body)
	}
	e.Clock.Advance(11 * time.Minute)
	if _, ok := b.me(); !ok {
		t.Fatal("the session lapsed; the test needs it standing")
	}

	again := "/auth/login?reauth=max-age&rd=" + url.QueryEscape("/auth/account")
	for _, tc := range []struct {
		method, path, accept string
	}{
		{http.MethodGet, "/auth/link/google", ""},
		{http.MethodDelete, "/auth/link/github", ""},
		{http.MethodGet, "/auth/link/google", "text/html"},
		{http.MethodGet, "/auth/unlink/github", "text/html"},
	} {
		b.accept = tc.accept
		a := b.do(tc.method, tc.path)
		if tc.accept == "" && (a.status != http.StatusUnauthorized || a.problemCode() != "reauthentication_required") {
			t.Errorf("%s %s with an old sign-in: %d %s, want 401 reauthentication_required", tc.method, tc.path, a.status, a.body)
		}
		if tc.accept != "" && (a.status != http.StatusSeeOther || a.location() != again) {
			t.Errorf("%s %s page with an old sign-in: %d to %q, want a 303 to %s", tc.method, tc.path, a.status, a.location(), again)
		}
	}
	b.accept = ""
	if a := b.postForm("/auth/unlink/github"); a.status != http.StatusSeeOther || a.location() != again {
		t.Errorf("form unlink with an old sign-in: %d to %q, want a 303 to %s", a.status, a.location(), again)
	}
	if ids := e.identities(u.ID); len(ids) != 1 || ids[0].Provider != "github" {
		t.Errorf("identities = %+v, want github still linked and nothing else", ids)
	}
}
