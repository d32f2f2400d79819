package authflows

import (
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/proxy/policy"
)

// With sign-up closed (no policy, no --open-signup), a provider sign-in
// whose verified email belongs to a password account gets the same "sign
// in, then link" answer as with --open-signup, not "no account": the person
// has an account, and the provider vouched for its address. Nothing is
// linked or created.
func TestAccountExistsWithSignupClosed(t *testing.T) {
	for _, provider := range bothProviders {
		t.Run(provider, func(t *testing.T) {
			e := newOAuthEnv(t, oauthEnvOptions{closedSignup: true})
			u := e.newUser("dana@example.com", true)
			e.setNext(provider, oauthtest.Account{Subject: "43", Email: "Dana@example.com", EmailVerified: true})
			b := e.newBrowser()
			a := b.flow("/auth/login/" + provider)
			if a.status != http.StatusConflict || a.problemCode() != "account_exists" {
				t.Fatalf("login: %d %s, want 409 account_exists", a.status, a.body)
			}
			if _, ok := a.cookie(oauthCookieName); ok {
				t.Error("session cookie set")
			}
			if ids := e.identities(u.ID); len(ids) != 0 {
				t.Errorf("identity merged silently: %+v", ids)
			}
			b.accept = "text/html"
			page := b.flow("/auth/login/" + provider)
			if page.status != http.StatusConflict || !strings.Contains(page.body, "Sign in, then link") {
				t.Errorf("account_exists page: %d %s", page.status, page.body)
			}
			// An unverified address proves nothing: still no account.
			e.setNext(provider, oauthtest.Account{Subject: "44", Email: "dana@example.com", EmailVerified: false})
			if a := e.newBrowser().flow("/auth/login/" + provider); a.status != http.StatusForbidden || a.problemCode() != "signup_closed" {
				t.Errorf("unverified: %d %s, want 403 signup_closed", a.status, a.body)
			}
		})
	}
}

// The pages of a provider sign-in refused for want of an account or by the
// access policy are laid out like every sign-in page (the app's name above
// the heading and in the title), say each thing once, and name the account
// the provider reported, escaped, so that a person signed in at the
// provider as someone else sees it.
func TestRefusedProviderSignInPages(t *testing.T) {
	const email = "o'neil@example.com"
	for _, tc := range []struct {
		name, heading string
		opts          oauthEnvOptions
		once          []string // phrases that must appear exactly once
	}{
		{"no account", "No account", oauthEnvOptions{closedSignup: true}, []string{"not open"}},
		{"not allowed", "Not allowed", oauthEnvOptions{closedSignup: true}, []string{"may not use", "not allowed to use"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.heading == "Not allowed" {
				tc.opts.policy = newPolicy(t, policy.Rules{EmailDomains: []string{"corp.com"}})
			}
			e := newOAuthEnv(t, tc.opts)
			e.setNext("github", oauthtest.Account{Subject: "45", Email: email, EmailVerified: true})
			b := e.newBrowser()
			b.accept = "text/html"
			a := b.flow("/auth/login/github")
			if a.status != http.StatusForbidden {
				t.Fatalf("%d %s, want 403", a.status, a.body)
			}
			app := e.Handler.cfg.AppName
			for _, want := range []string{
				"<title>" + tc.heading + " · " + app + "</title>",
				`<p class="app">` + app + "</p>",
				"<h1>" + tc.heading + "</h1>",
				html.EscapeString(email),
			} {
				if !strings.Contains(a.body, want) {
					t.Errorf("page lacks %q:\n%s", want, a.body)
				}
			}
			if strings.Contains(a.body, email) {
				t.Errorf("the email is not escaped:\n%s", a.body)
			}
			text := strings.ToLower(a.body)
			n := 0
			for _, phrase := range tc.once {
				n += strings.Count(text, phrase)
			}
			if n != 1 {
				t.Errorf("the page says %q %d times, want once:\n%s", tc.once, n, a.body)
			}
		})
	}
}

// A GitHub account without a verified email is named by its login on the
// refusal page, escaped.
func TestRefusedPageNamesTheGitHubLogin(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{closedSignup: true})
	e.setNext("github", oauthtest.Account{Subject: "47", Email: "x@example.com", EmailVerified: false, Login: "dave-the-octocat"})
	b := e.newBrowser()
	b.accept = "text/html"
	a := b.flow("/auth/login/github")
	if a.status != http.StatusForbidden || !strings.Contains(a.body, "<strong>dave-the-octocat</strong>") {
		t.Errorf("%d, want 403 naming the login:\n%s", a.status, a.body)
	}
}
