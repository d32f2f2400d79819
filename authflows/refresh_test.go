package authflows

import (
	"context"
	"crypto/rand"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/authflows/provider"
	"github.com/gatehouse-auth/gatehouse/authflows/seal"
	"github.com/gatehouse-auth/gatehouse/proxy/policy"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// testTokenKey is a fresh --token-key-file key.
func testTokenKey(t *testing.T) *seal.Key {
	t.Helper()
	raw := make([]byte, seal.KeySize)
	_, _ = rand.Read(raw)
	k, err := seal.ParseKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// refreshEnv is an OAuth env with a token key and --session-refresh 1h.
func refreshEnv(t *testing.T, opts oauthEnvOptions) *oauthEnv {
	t.Helper()
	key := testTokenKey(t)
	opts.edit = func(c *Config) { c.TokenKey, c.SessionRefresh = key, time.Hour }
	return newOAuthEnv(t, opts)
}

// refreshNow moves the clock past the refresh interval and runs one pass.
func (e *oauthEnv) refreshNow() int {
	e.Clock.Advance(time.Hour + time.Second)
	return e.Handler.RefreshDue(context.Background())
}

// sessionGroups is the groups of the browser's session, "(ended)" when it
// has none.
func (b *oauthBrowser) sessionGroups() string {
	b.env.t.Helper()
	s, err := b.env.Store.Session(context.Background(), storage.HashSecret(b.sessionID()))
	if err != nil {
		return "(ended)"
	}
	return s.Groups
}

// refreshResult reads gatehouse_session_refresh_total{result}.
func (e *oauthEnv) refreshResult(result string) float64 {
	return e.CounterValue(e.t, "gatehouse_session_refresh_total", map[string]string{"result": result})
}

// README (session refresh): a provider sign-in's groups follow the
// provider at each check: a GitHub org membership removed disappears from
// the session (the user still passes by the other org).
func TestRefreshGroupsFollowProvider(t *testing.T) {
	e := refreshEnv(t, oauthEnvOptions{providers: []string{"github"},
		policy:    newPolicy(t, policy.Rules{GitHubOrgs: []string{"acme", "ops"}}),
		configure: func(c *provider.Config) { c.Orgs = []string{"acme", "ops"} }})
	e.github.SetNext(oauthtest.Account{Subject: "77", Email: "gh@example.com", EmailVerified: true, Orgs: []string{"acme", "ops"}})
	b := e.newBrowser()
	if a := b.flow("/auth/login/github"); a.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", a.status, a.body)
	}
	if got := b.sessionGroups(); got != "github:acme,github:ops" {
		t.Fatalf("groups after sign-in: %q", got)
	}
	if n := e.Handler.RefreshDue(context.Background()); n != 0 {
		t.Fatalf("%d sessions checked before --session-refresh passed", n)
	}
	e.github.UpdateAccount("77", func(a *oauthtest.Account) { a.Orgs = []string{"acme"} })
	if n := e.refreshNow(); n != 1 {
		t.Fatalf("%d sessions checked after the interval, want 1", n)
	}
	if got := b.sessionGroups(); got != "github:acme" {
		t.Fatalf("groups after the org membership was removed and the session checked: %q, want github:acme", got)
	}
	if e.refreshResult("changed") != 1 {
		t.Error("gatehouse_session_refresh_total{result=changed} not counted")
	}
	if _, ok := b.me(); !ok {
		t.Fatal("the session ended although the user still passes")
	}
}

// With the policy letting in members of an org, the session ends at the
// check after the membership is removed (audit session_ended_by_provider).
func TestRefreshEndsWhenPolicyNoLongerPasses(t *testing.T) {
	e := refreshEnv(t, oauthEnvOptions{providers: []string{"github"},
		policy:    newPolicy(t, policy.Rules{GitHubOrgs: []string{"acme"}}),
		configure: func(c *provider.Config) { c.Orgs = []string{"acme"} }})
	e.github.SetNext(oauthtest.Account{Subject: "78", Email: "m@example.com", EmailVerified: true, Orgs: []string{"acme"}})
	b := e.newBrowser()
	if a := b.flow("/auth/login/github"); a.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", a.status, a.body)
	}
	e.refreshNow()
	if _, ok := b.me(); !ok {
		t.Fatal("a check that changed nothing ended the session")
	}
	e.github.UpdateAccount("78", func(a *oauthtest.Account) { a.Orgs = nil })
	e.refreshNow()
	if _, ok := b.me(); ok {
		t.Fatal("the org membership the policy needs was removed, yet the session stands after the check")
	}
	if !e.hasEvent("session_ended_by_provider") || e.refreshResult("ended") != 1 {
		t.Errorf("no session_ended_by_provider event or ended count:\n%s", strings.Join(e.Logs.Lines(), "\n"))
	}
}

// Each way the provider takes the account away ends the session at the
// next check: a refused refresh token (google), a deleted account (google,
// github), an email no longer verified (google), a revoked token (github).
func TestRefreshEndsSession(t *testing.T) {
	for _, tc := range []struct {
		name, provider string
		change         func(e *oauthEnv, subject string)
	}{
		{"google grant revoked", "google", func(e *oauthEnv, sub string) { e.google.RevokeGrants(sub) }},
		{"google account deleted", "google", func(e *oauthEnv, sub string) { e.google.DeleteAccount(sub) }},
		{"google email unverified", "google", func(e *oauthEnv, sub string) {
			e.google.UpdateAccount(sub, func(a *oauthtest.Account) { a.EmailVerified = false })
		}},
		{"github account deleted", "github", func(e *oauthEnv, sub string) { e.github.DeleteAccount(sub) }},
		{"github token revoked", "github", func(e *oauthEnv, sub string) { e.github.RevokeGrants(sub) }},
		{"github email unverified", "github", func(e *oauthEnv, sub string) {
			e.github.UpdateAccount(sub, func(a *oauthtest.Account) { a.EmailVerified = false })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := refreshEnv(t, oauthEnvOptions{providers: []string{tc.provider}})
			e.setNext(tc.provider, oauthtest.Account{Subject: "901", Email: "x@example.com", EmailVerified: true})
			b := e.newBrowser()
			if a := b.flow("/auth/login/" + tc.provider); a.status != http.StatusSeeOther {
				t.Fatalf("sign-in: %d %s", a.status, a.body)
			}
			tc.change(e, "901")
			e.refreshNow()
			if _, ok := b.me(); ok {
				t.Fatalf("%s: the session stands after the check", tc.name)
			}
			if !e.hasEvent("session_ended_by_provider") {
				t.Errorf("%s: no session_ended_by_provider event", tc.name)
			}
		})
	}
}

// A provider that answers 500, or does not answer at all, changes nothing:
// the session and its groups stand, the check is counted as unreachable,
// and the session is checked again once the claim lapses. While the
// provider hangs, sign-in checks of the session (the proxy's path) are
// answered.
func TestRefreshProviderDownChangesNothing(t *testing.T) {
	t.Run("github 500", func(t *testing.T) {
		e := refreshEnv(t, oauthEnvOptions{providers: []string{"github"}})
		e.github.SetNext(oauthtest.Account{Subject: "907", Email: "z@example.com", EmailVerified: true})
		b := e.newBrowser()
		if a := b.flow("/auth/login/github"); a.status != http.StatusSeeOther {
			t.Fatalf("sign-in: %d %s", a.status, a.body)
		}
		e.github.FailNextAPI("user", http.StatusInternalServerError)
		e.refreshNow()
		if _, ok := b.me(); !ok || e.refreshResult("unreachable") != 1 {
			t.Fatalf("GitHub answering 500: session stands %v, unreachable %v", ok, e.refreshResult("unreachable"))
		}
	})
	e := refreshEnv(t, oauthEnvOptions{providers: []string{"google"}})
	e.google.SetNext(oauthtest.Account{Subject: "902", Email: "y@example.com", EmailVerified: true})
	b := e.newBrowser()
	if a := b.flow("/auth/login/google"); a.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", a.status, a.body)
	}
	e.google.FailNextToken(http.StatusInternalServerError)
	e.refreshNow()
	if _, ok := b.me(); !ok {
		t.Fatal("a provider answering 500 ended the session")
	}
	if e.refreshResult("unreachable") != 1 {
		t.Errorf("unreachable count %v, want 1", e.refreshResult("unreachable"))
	}

	e.Clock.Advance(refreshLease + time.Second)
	if n := e.Handler.RefreshDue(context.Background()); n != 0 {
		t.Fatalf("%d sessions tried again 5 minutes after a failed check, want none before a quarter interval", n)
	}
	e.Clock.Advance(claimFor(time.Hour) - refreshLease)              // the claim of the failed check lapsed
	e.google.FailNextAPI("userinfo", http.StatusInternalServerError) // not asked at a refresh: the ID token says it all
	if n := e.Handler.RefreshDue(context.Background()); n != 1 {
		t.Fatalf("%d sessions checked again after the claim lapsed, want 1", n)
	}
	if e.refreshResult("kept") != 1 {
		t.Errorf("a check after the provider came back: kept %v, want 1", e.refreshResult("kept"))
	}

	release := make(chan struct{})
	e.google.Hang(release)
	done := make(chan int)
	go func() {
		e.Clock.Advance(time.Hour + time.Second)
		done <- e.Handler.RefreshDue(context.Background())
	}()
	if _, ok := b.me(); !ok { // answered while the refresher waits on the provider
		t.Fatal("the session was refused while the provider hangs")
	}
	close(release) // the fake answers now, but the refresher's call timed out or completes
	<-done
	if _, ok := b.me(); !ok {
		t.Fatal("a hanging provider ended the session")
	}
}

// README (provider tokens): with --token-key-file the provider's tokens are
// kept sealed: the database file holds none of them in clear, and the
// grant holds sealed tokens that open only with the key.
func TestProviderTokensSealedAtRest(t *testing.T) {
	e := refreshEnv(t, oauthEnvOptions{})
	for _, p := range bothProviders {
		e.setNext(p, oauthtest.Account{Subject: "55", Email: p + "@example.com", EmailVerified: true})
		b := e.newBrowser()
		if a := b.flow("/auth/login/" + p); a.status != http.StatusSeeOther {
			t.Fatalf("%s sign-in: %d %s", p, a.status, a.body)
		}
		g, err := e.Store.GrantOf(context.Background(), storage.HashSecret(b.sessionID()))
		if err != nil || g.Tokens == nil {
			t.Fatalf("%s sign-in kept no sealed tokens: %+v %v", p, g, err)
		}
	}
	if err := e.Store.Close(); err != nil { // flush to the file
		t.Fatal(err)
	}
	db, err := os.ReadFile(e.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	secrets := append(e.google.Secrets(), e.github.Secrets()...)
	if len(secrets) < 5 {
		t.Fatalf("fakes issued only %d secrets", len(secrets))
	}
	for _, s := range secrets {
		if strings.Contains(string(db), s) {
			t.Errorf("a provider token is in the database in clear")
		}
	}
}

// A password change re-issues a provider session (a user with a password
// who signed in with Google): the new session keeps the grant, so it is
// still checked with the provider, and still ends when the provider
// refuses; the change does not let the session escape the refresher.
func TestPasswordChangeKeepsProviderGrant(t *testing.T) {
	e := refreshEnv(t, oauthEnvOptions{providers: []string{"google"}})
	u := e.CreateUser(t, "pat@example.com", testPassword)
	linkIdentity(t, e.Store, storage.Identity{Provider: "google", Subject: "904", Email: "pat@example.com", UserID: u.ID, CreatedAt: e.Clock.Now()})
	e.google.SetNext(oauthtest.Account{Subject: "904", Email: "pat@example.com", EmailVerified: true})
	b := e.newBrowser()
	if a := b.flow("/auth/login/google"); a.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", a.status, a.body)
	}
	before, err := e.Store.GrantOf(context.Background(), storage.HashSecret(b.sessionID()))
	if err != nil {
		t.Fatalf("grant of the Google session: %v", err)
	}
	const next = "a brand new passphrase"
	resp := e.PostJSON("/auth/account/password", map[string]string{"current_password": testPassword, "password": next, "confirm": next},
		&http.Cookie{Name: oauthCookieName, Value: b.sessionID()})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("password change: %d %s", resp.StatusCode, e.Body(t, resp))
	}
	fresh := e.SessionCookie(resp)
	after, err := e.Store.GrantOf(context.Background(), storage.HashSecret(fresh.Value))
	if err != nil {
		t.Fatalf("the re-issued session has no grant: %v", err)
	}
	if after.Subject != before.Subject || string(after.Tokens) != string(before.Tokens) || !after.NextRefresh.Equal(before.NextRefresh) {
		t.Errorf("grant changed in the re-issue: %+v, want %+v under the new session", after, before)
	}
	e.google.RevokeGrants("904")
	e.refreshNow()
	if _, err := e.Store.Session(context.Background(), storage.HashSecret(fresh.Value)); err == nil {
		t.Fatal("the re-issued session outlived the provider's refusal")
	}
}

// Google: a check that finds the account as it was keeps the session and
// its groups (counted kept); a hosted domain the account left is a group
// lost, and with the policy needing it the session ends.
func TestRefreshGoogleHostedDomain(t *testing.T) {
	e := refreshEnv(t, oauthEnvOptions{providers: []string{"google"},
		policy:    newPolicy(t, policy.Rules{GoogleHostedDomains: []string{"corp.com"}}),
		configure: func(c *provider.Config) { c.HostedDomains = []string{"corp.com"} }})
	e.google.SetNext(oauthtest.Account{Subject: "905", Email: "h@corp.com", EmailVerified: true, HostedDomain: "corp.com"})
	b := e.newBrowser()
	if a := b.flow("/auth/login/google"); a.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", a.status, a.body)
	}
	if q := e.google.AuthorizeRequests()[0]; q.Get("access_type") != "offline" || q.Get("prompt") != "consent" {
		t.Errorf("Google authorization without access_type=offline and prompt=consent (no refresh token then): %v", q)
	}
	e.refreshNow()
	if got := b.sessionGroups(); got != "google:corp.com" || e.refreshResult("kept") != 1 {
		t.Fatalf("after a check that changed nothing: groups %q, kept %v", got, e.refreshResult("kept"))
	}
	e.google.UpdateAccount("905", func(a *oauthtest.Account) { a.HostedDomain = "" })
	e.refreshNow()
	if got := b.sessionGroups(); got != "(ended)" {
		t.Fatalf("the hosted domain the policy needs is gone, session groups %q", got)
	}
}

// Without a token key nothing would keep a refresh token: Google is not
// asked for one, so its consent screen does not show at every sign-in.
func TestGoogleNotAskedOfflineWithoutTokenKey(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{providers: []string{"google"}})
	e.google.SetNext(oauthtest.Account{Subject: "908", Email: "o@example.com", EmailVerified: true})
	if a := e.newBrowser().flow("/auth/login/google"); a.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", a.status, a.body)
	}
	if q := e.google.AuthorizeRequests()[0]; q.Has("access_type") || q.Has("prompt") {
		t.Errorf("Google asked for offline access without a token key: %v", q)
	}
}
