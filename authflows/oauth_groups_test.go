package authflows

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/authflows/provider"
)

// loginGroups is the groups attribute of the last oauth_login event.
func loginGroups(t *testing.T, e *oauthEnv) string {
	t.Helper()
	events := e.Logs.Events("oauth_login")
	if len(events) == 0 {
		t.Fatal("no oauth_login event")
	}
	_, groups, _ := strings.Cut(events[len(events)-1], "groups=")
	return strings.Trim(strings.Fields(groups + " ")[0], `"`)
}

// GitHub with --github-org and --github-team: read:org is asked for, the
// memberships are read across every page of /user/orgs and /user/teams, and
// only the configured ones become groups, spelled as configured.
func TestOAuthGitHubGroups(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{providers: []string{"github"}, configure: func(c *provider.Config) {
		c.Orgs = []string{"acme", "Other"}
		c.Teams = []string{"acme/core", "acme/ops", "acme/absent"}
	}})
	e.github.SetNext(oauthtest.Account{
		Subject: "4242", Email: "gh@example.com", EmailVerified: true,
		Orgs:  []string{"x1", "x2", "x3", "x4", "acme", "other"}, // three pages of two
		Teams: []string{"x/a", "y/b", "acme/ops", "zz/c", "ACME/core"},
	})
	if a := e.newBrowser().flow("/auth/login/github"); a.status != http.StatusSeeOther {
		t.Fatalf("%d %s", a.status, a.body)
	}
	if scope := e.github.AuthorizeRequests()[0].Get("scope"); scope != "read:user user:email read:org" {
		t.Errorf("scope %q, want read:org added", scope)
	}
	if got, want := loginGroups(t, e), "github:Other,github:acme,github:acme/core,github:acme/ops"; got != want {
		t.Errorf("groups %q, want %q", got, want)
	}
}

// Without orgs or teams configured, read:org is not asked for and no
// membership is read (OA11).
func TestOAuthGitHubNoGroupsConfigured(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{providers: []string{"github"}})
	e.github.SetNext(oauthtest.Account{Subject: "7", Email: "n@example.com", EmailVerified: true, Orgs: []string{"acme"}})
	if a := e.newBrowser().flow("/auth/login/github"); a.status != http.StatusSeeOther {
		t.Fatalf("%d %s", a.status, a.body)
	}
	if scope := e.github.AuthorizeRequests()[0].Get("scope"); strings.Contains(scope, "read:org") {
		t.Errorf("scope %q asks for read:org", scope)
	}
	if got := loginGroups(t, e); got != "" {
		t.Errorf("groups %q, want none", got)
	}
}

// A token granted without read:org cannot show memberships: the sign-in is
// refused (fail closed), not let in without groups. A failing membership
// call is refused too.
func TestOAuthGitHubGroupsFailClosed(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{providers: []string{"github"}, configure: func(c *provider.Config) {
		c.Orgs, c.Teams = []string{"acme"}, []string{"acme/core"}
	}})
	e.github.SetNext(oauthtest.Account{Subject: "9", Email: "f@example.com", EmailVerified: true, Orgs: []string{"acme"}})
	e.github.GrantNextWithout("read:org")
	b := e.newBrowser()
	if a := b.flow("/auth/login/github"); a.status != http.StatusForbidden || a.problemCode() != "insufficient_scope" {
		t.Errorf("without read:org: %d %s, want 403 insufficient_scope", a.status, a.body)
	}
	e.github.FailNextAPI("teams", http.StatusInternalServerError)
	if a := b.flow("/auth/login/github"); a.status != http.StatusBadGateway {
		t.Errorf("teams failing: %d %s, want 502", a.status, a.body)
	}
	if _, ok := b.me(); ok {
		t.Error("signed in")
	}
	if users, _ := e.Store.ListUsers(t.Context()); len(users) != 0 {
		t.Errorf("users created: %+v", users)
	}
}

// Google: the verified ID token's hd earns google:HD when it is a
// configured hosted domain; another hd earns nothing.
func TestOAuthGoogleHostedDomainGroup(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{providers: []string{"google"}, configure: func(c *provider.Config) {
		c.HostedDomains = []string{"corp.example"}
	}})
	e.google.SetNext(oauthtest.Account{Subject: "g-hd", Email: "a@corp.example", EmailVerified: true, HostedDomain: "Corp.Example"})
	if a := e.newBrowser().flow("/auth/login/google"); a.status != http.StatusSeeOther {
		t.Fatalf("%d %s", a.status, a.body)
	}
	if got := loginGroups(t, e); got != "google:corp.example" {
		t.Errorf("groups %q, want google:corp.example", got)
	}
	e.google.SetNext(oauthtest.Account{Subject: "g-other", Email: "b@other.example", EmailVerified: true, HostedDomain: "other.example"})
	if a := e.newBrowser().flow("/auth/login/google"); a.status != http.StatusSeeOther {
		t.Fatalf("%d %s", a.status, a.body)
	}
	if got := loginGroups(t, e); got != "" {
		t.Errorf("groups %q for another hd, want none", got)
	}
}
