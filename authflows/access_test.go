package authflows

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mailqueue "github.com/gatehouse-auth/gatehouse/authflows/mail"
	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/authflows/provider"
	"github.com/gatehouse-auth/gatehouse/proxy/policy"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// Tests of the access policy at sign-in (README "Access policy: who may
// get in"; AP1, AP3). The request-path half is in proxy; these go end to
// end over HTTP with the fake providers wherever the fakes reach.

func newPolicy(t *testing.T, rules policy.Rules) *policy.Policy {
	t.Helper()
	p, err := policy.New(rules, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// wantNothingCreated fails when a user exists or the answer set a session.
func (e *oauthEnv) wantNothingCreated(t *testing.T, a oauthAnswer) {
	t.Helper()
	if c, ok := a.cookie(oauthCookieName); ok && c.MaxAge >= 0 {
		t.Error("a session cookie was set")
	}
	users, err := e.Store.ListUsers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if ids := e.identities(u.ID); len(ids) != 0 {
			t.Errorf("identity written: %+v", ids)
		}
	}
	if len(users) != 0 {
		t.Errorf("users created: %+v", users)
	}
}

// AP3: with no policy and no --open-signup, an unknown identity gets 403
// signup_closed and nothing is written; a user who linked that identity
// still signs in with it.
func TestSignupClosedByDefault(t *testing.T) {
	for _, provider := range bothProviders {
		t.Run(provider, func(t *testing.T) {
			e := newOAuthEnv(t, oauthEnvOptions{closedSignup: true})
			e.setNext(provider, oauthtest.Account{Subject: "700", Email: "new@example.com", EmailVerified: true})
			b := e.newBrowser()
			a := b.flow("/auth/login/" + provider)
			if a.status != http.StatusForbidden || a.problemCode() != "signup_closed" {
				t.Fatalf("unknown identity: %d %s, want 403 signup_closed", a.status, a.body)
			}
			e.wantNothingCreated(t, a)
			if !e.hasEvent("oauth_signup_refused") {
				t.Error("no oauth_signup_refused event")
			}

			u := e.newUser("linked@example.com", true)
			linkIdentity(t, e.Store, storage.Identity{Provider: provider, Subject: "701", UserID: u.ID, CreatedAt: e.Clock.Now()})
			e.setNext(provider, oauthtest.Account{Subject: "701", Email: "linked@example.com", EmailVerified: true})
			a = e.newBrowser().flow("/auth/login/" + provider)
			if a.status != http.StatusSeeOther {
				t.Fatalf("linked identity: %d %s, want 303", a.status, a.body)
			}
			if _, ok := a.cookie(oauthCookieName); !ok {
				t.Fatal("linked identity got no session")
			}
		})
	}
}

// With the policy on, an unknown identity becomes an account only when it
// passes; an unverified email never matches a domain or the emails file.
func TestSignupByPolicy(t *testing.T) {
	dir := t.TempDir()
	emails := filepath.Join(dir, "emails.txt")
	if err := os.WriteFile(emails, []byte("Listed@Partner.net\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rules := policy.Rules{EmailDomains: []string{"corp.com", ".group.org"}, EmailsFile: emails}
	for _, tc := range []struct {
		name     string
		account  oauthtest.Account
		pass     bool
		wantCode string
	}{
		{"exact domain", oauthtest.Account{Email: "alice@corp.com", EmailVerified: true}, true, ""},
		{"case of the address", oauthtest.Account{Email: "Alice@CORP.com", EmailVerified: true}, true, ""},
		{"subdomain of an exact domain", oauthtest.Account{Email: "alice@eu.corp.com", EmailVerified: true}, false, "access_denied"},
		{"dot domain itself", oauthtest.Account{Email: "alice@group.org", EmailVerified: true}, true, ""},
		{"dot domain subdomain", oauthtest.Account{Email: "alice@eu.group.org", EmailVerified: true}, true, ""},
		{"listed address", oauthtest.Account{Email: "listed@partner.net", EmailVerified: true}, true, ""},
		{"unlisted address", oauthtest.Account{Email: "other@partner.net", EmailVerified: true}, false, "access_denied"},
		{"other domain", oauthtest.Account{Email: "alice@example.com", EmailVerified: true}, false, "access_denied"},
		{"unverified matching domain", oauthtest.Account{Email: "alice@corp.com", EmailVerified: false}, false, "access_denied"},
		{"unverified listed address", oauthtest.Account{Email: "listed@partner.net", EmailVerified: false}, false, "access_denied"},
	} {
		for _, provider := range bothProviders {
			t.Run(tc.name+"/"+provider, func(t *testing.T) {
				e := newOAuthEnv(t, oauthEnvOptions{closedSignup: true, policy: newPolicy(t, rules)})
				tc.account.Subject = "800"
				e.setNext(provider, tc.account)
				a := e.newBrowser().flow("/auth/login/" + provider)
				if !tc.pass {
					if a.status != http.StatusForbidden || a.problemCode() != tc.wantCode {
						t.Fatalf("%d %s, want 403 %s", a.status, a.body, tc.wantCode)
					}
					e.wantNothingCreated(t, a)
					return
				}
				if a.status != http.StatusSeeOther {
					t.Fatalf("%d %s, want 303", a.status, a.body)
				}
				users, _ := e.Store.ListUsers(t.Context())
				if len(users) != 1 || users[0].Email != storage.NormalizeEmail(tc.account.Email) {
					t.Fatalf("users = %+v", users)
				}
			})
		}
	}
}

// Every OAuth sign-in of an existing user passes the policy too, with the
// account's email: refused, no session.
func TestOAuthSignInRefusedByPolicy(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{closedSignup: true, policy: newPolicy(t, policy.Rules{EmailDomains: []string{"corp.com"}})})
	for _, tc := range []struct {
		email, subject string
		pass           bool
	}{{"in@corp.com", "901", true}, {"out@example.com", "902", false}} {
		u := e.newUser(tc.email, false)
		subject := tc.subject
		linkIdentity(t, e.Store, storage.Identity{Provider: "github", Subject: subject, UserID: u.ID, CreatedAt: e.Clock.Now()})
		e.github.SetNext(oauthtest.Account{Subject: subject, Email: tc.email, EmailVerified: true})
		a := e.newBrowser().flow("/auth/login/github")
		_, session := a.cookie(oauthCookieName)
		switch {
		case tc.pass && (a.status != http.StatusSeeOther || !session):
			t.Errorf("%s: %d %s, want 303 with a session", tc.email, a.status, a.body)
		case !tc.pass && (a.status != http.StatusForbidden || a.problemCode() != "access_denied" || session):
			t.Errorf("%s: %d %s (session %t), want 403 access_denied and no session", tc.email, a.status, a.body, session)
		}
	}
}

// A disabled user whose identity checks out gets 403 account_disabled.
func TestOAuthDisabledUser(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	u := e.newUser("gone@example.com", false)
	linkIdentity(t, e.Store, storage.Identity{Provider: "google", Subject: "g-9", UserID: u.ID, CreatedAt: e.Clock.Now()})
	if _, err := e.Store.SetUserDisabled(t.Context(), u.ID, true); err != nil {
		t.Fatal(err)
	}
	e.google.SetNext(oauthtest.Account{Subject: "g-9", Email: "gone@example.com", EmailVerified: true})
	a := e.newBrowser().flow("/auth/login/google")
	if a.status != http.StatusForbidden || a.problemCode() != "account_disabled" {
		t.Fatalf("%d %s, want 403 account_disabled", a.status, a.body)
	}
	if _, ok := a.cookie(oauthCookieName); ok {
		t.Fatal("a disabled user got a session")
	}
}

// A password user is refused when the policy is on and their email does not
// match; a disabled one gets account_disabled only after the password checks
// out (a wrong password still says invalid_credentials).
func TestPasswordLoginPolicyAndDisabled(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.Policy = newPolicy(t, policy.Rules{EmailDomains: []string{"corp.com"}}) })
	const password = "correct horse battery staple"
	e.CreateUser(t, "in@corp.com", password)
	e.CreateUser(t, "out@example.com", password)
	disabled := e.CreateUser(t, "off@corp.com", password)
	if _, err := e.Store.SetUserDisabled(t.Context(), disabled.ID, true); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		email, password string
		status          int
		code            string
	}{
		{"in@corp.com", password, http.StatusOK, ""},
		{"IN@Corp.com", password, http.StatusOK, ""},
		{"out@example.com", password, http.StatusForbidden, "access_denied"},
		{"off@corp.com", password, http.StatusForbidden, "account_disabled"},
		{"off@corp.com", "wrong password entirely", http.StatusUnauthorized, "invalid_credentials"},
		{"out@example.com", "wrong password entirely", http.StatusUnauthorized, "invalid_credentials"},
	} {
		resp := e.PostJSON("/auth/login", map[string]string{"email": tc.email, "password": tc.password})
		if tc.status == http.StatusOK {
			if resp.StatusCode != http.StatusOK || e.SessionCookie(resp) == nil {
				t.Errorf("%s: status %d, want 200 with a session", tc.email, resp.StatusCode)
			}
			continue
		}
		if code := e.ProblemCode(t, resp, tc.status); code != tc.code {
			t.Errorf("%s: code %q, want %q", tc.email, code, tc.code)
		}
		if e.SessionCookie(resp) != nil {
			t.Errorf("%s: refused login set a session cookie", tc.email)
		}
	}
	// The form shows the refusal on the sign-in page.
	resp := e.PostForm("/auth/login", map[string][]string{"email": {"out@example.com"}, "password": {password}})
	if body := e.Body(t, resp); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "not allowed") {
		t.Errorf("form refusal: %d %s", resp.StatusCode, body)
	}
}

// A password session records how it signed in.
func TestPasswordSessionMethod(t *testing.T) {
	e := newTestEnv(t)
	const password = "correct horse battery staple"
	e.CreateUser(t, "ada@example.com", password)
	c := e.Login(t, "ada@example.com", password)
	s, err := e.Store.Session(t.Context(), storage.HashSecret(c.Value))
	if err != nil {
		t.Fatal(err)
	}
	if s.Method != "pwd" || s.Groups != "" {
		t.Fatalf("session Method %q Groups %q, want pwd and none", s.Method, s.Groups)
	}
}

// No reset mail for a disabled user: not queued at forgot, and a job queued
// before the user was disabled is dropped at delivery without a token.
func TestForgotDisabledUserNotMailed(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{})
	u := e.CreateUser(t, "alice@example.com", oldPassword)
	if _, err := e.Store.SetUserDisabled(t.Context(), u.ID, true); err != nil {
		t.Fatal(err)
	}
	e.forgot(t, "alice@example.com")
	if jobs := e.queuedJobs(t); len(jobs) != 0 {
		t.Fatalf("queued for a disabled user: %+v", jobs)
	}
	e.noMail(t)

	// Queued while enabled, disabled before delivery.
	if _, err := e.Store.SetUserDisabled(t.Context(), u.ID, false); err != nil {
		t.Fatal(err)
	}
	job := storage.Mail{Kind: storage.MailKindPasswordReset, UserID: u.ID, To: u.Email}
	if _, err := e.Store.SetUserDisabled(t.Context(), u.ID, true); err != nil {
		t.Fatal(err)
	}
	_, err := e.Handler.PrepareMail(t.Context(), job)
	if !errors.Is(err, mailqueue.ErrPermanent) {
		t.Fatalf("PrepareMail for a disabled user: %v, want ErrPermanent", err)
	}
}

// The groups a sign-in earned decide, and are kept on the session for
// X-Forwarded-Groups. The fake providers do not report groups yet (the
// provider side fills provider.Identity.Groups), so the callback's second
// half is driven with the identity a provider would return.
func TestSignInByEarnedGroups(t *testing.T) {
	// Every rule at once: each one alone lets its users in.
	rules := policy.Rules{
		EmailDomains: []string{"corp.com"},
		GitHubOrgs:   []string{"acme"}, GitHubTeams: []string{"other/ops"},
		GoogleHostedDomains: []string{"corp.com"}, AllowGroups: []string{"admins"},
	}
	for _, tc := range []struct {
		name, provider string
		groups         []string
		pass           bool
		wantGroups     string
		email          string // default someone@example.com, which no domain rule matches
	}{
		{"domain alone", "github", nil, true, "", "dev@corp.com"},
		{"domain and an unconfigured org", "github", []string{"github:unlisted"}, true, "", "dev@corp.com"},
		{"nothing matches", "github", nil, false, "", ""},
		{"org member", "github", []string{"github:acme", "github:unlisted"}, true, "github:acme", ""},
		{"not an org member", "github", []string{"github:unlisted"}, false, "", ""},
		{"team member", "github", []string{"github:other/ops"}, true, "github:other/ops", ""},
		{"other team", "github", []string{"github:other/dev"}, false, "", ""},
		{"hosted domain", "google", []string{"google:corp.com"}, true, "google:corp.com", ""},
		{"other hosted domain", "google", []string{"google:evil.com"}, false, "", ""},
		{"oidc group", "google", []string{"oidc:users", "oidc:admins"}, true, "oidc:users,oidc:admins", ""},
		{"oidc group not allowed", "google", []string{"oidc:users"}, false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newOAuthEnv(t, oauthEnvOptions{closedSignup: true, policy: newPolicy(t, rules), throughProxy: true})
			if tc.email == "" {
				tc.email = "someone@example.com"
			}
			id := provider.Identity{Subject: "s-1", Email: tc.email, EmailVerified: true, Groups: tc.groups}
			w := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodGet, e.base+"/auth/callback/"+tc.provider, nil)
			e.Handler.oauth.completeLogin(w, r, e.Handler.providers[tc.provider], storage.OAuthFlow{Redirect: "/app"}, id)
			res := w.Result()
			if !tc.pass {
				if res.StatusCode != http.StatusForbidden || !strings.Contains(w.Body.String(), `"access_denied"`) {
					t.Fatalf("%d %s, want 403 access_denied", res.StatusCode, w.Body)
				}
				if users, _ := e.Store.ListUsers(t.Context()); len(users) != 0 {
					t.Fatalf("users created: %+v", users)
				}
				return
			}
			if res.StatusCode != http.StatusSeeOther {
				t.Fatalf("%d %s, want 303", res.StatusCode, w.Body)
			}
			var sessionID string
			for _, c := range res.Cookies() {
				if c.Name == oauthCookieName {
					sessionID = c.Value
				}
			}
			s, err := e.Store.Session(t.Context(), storage.HashSecret(sessionID))
			if err != nil {
				t.Fatal(err)
			}
			if s.Groups != tc.wantGroups || s.Method != tc.provider {
				t.Fatalf("session Groups %q Method %q, want %q %q", s.Groups, s.Method, tc.wantGroups, tc.provider)
			}
			// The session passes the gate and the upstream gets the groups.
			req, _ := http.NewRequest(http.MethodGet, e.base+"/app", nil)
			req.Header.Set("Cookie", oauthCookieName+"="+sessionID)
			req.Header.Set("X-Forwarded-Groups", "oidc:forged")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("gate: %d", resp.StatusCode)
			}
			got := e.upstream.Requests()
			v := got[len(got)-1].Header.Values("X-Forwarded-Groups")
			if tc.wantGroups == "" && len(v) != 0 || tc.wantGroups != "" && (len(v) != 1 || v[0] != tc.wantGroups) {
				t.Fatalf("upstream X-Forwarded-Groups %q, want %q (absent when empty; never the client's copy)", v, tc.wantGroups)
			}
		})
	}
}

// AP2 end to end: an address removed from the emails file loses access on
// its next request through the gate, without a restart; a broken file keeps
// the last good list.
func TestEmailsFileChangeEndToEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "emails.txt")
	write := func(content string, by time.Duration) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		later := time.Now().Add(by)
		if err := os.Chtimes(path, later, later); err != nil {
			t.Fatal(err)
		}
	}
	write("ada@example.com\nbob@example.com\n", 0)
	p := newPolicy(t, policy.Rules{EmailsFile: path})
	e := newOAuthEnv(t, oauthEnvOptions{closedSignup: true, policy: p, throughProxy: true})
	e.github.SetNext(oauthtest.Account{Subject: "1", Email: "ada@example.com", EmailVerified: true})
	b := e.newBrowser()
	if a := b.flow("/auth/login/github"); a.status != http.StatusSeeOther {
		t.Fatalf("sign-up of a listed address: %d %s", a.status, a.body)
	}
	if a := b.get("/app"); a.status != http.StatusOK {
		t.Fatalf("listed: %d", a.status)
	}

	write("bob@example.com\nbroken line\n", time.Second)
	p.Refresh()
	if a := b.get("/app"); a.status != http.StatusOK {
		t.Fatalf("a broken file must keep the last good list: %d", a.status)
	}

	write("bob@example.com\n", 2*time.Second)
	p.Refresh()
	a := b.get("/app")
	if a.status != http.StatusForbidden || a.problemCode() != "access_denied" {
		t.Fatalf("removed: %d %s, want 403 access_denied", a.status, a.body)
	}
	if n := len(e.upstream.Requests()); n != 2 {
		t.Fatalf("the app got %d requests, want 2", n)
	}
}
