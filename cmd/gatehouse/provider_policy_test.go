package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oauth2-proxy/mockoidc"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
)

// providerRig is the real binary wiring (flags → newServer) in front of a
// recording upstream, with all three provider kinds enabled against fakes
// over real HTTP: GitHub and Google from authflows/oauthtest, a generic
// OpenID Provider from mockoidc. The access rules under test are the extra
// flags.
type providerRig struct {
	t      *testing.T
	g      *gatehouse
	github *oauthtest.GitHub
	google *oauthtest.Google
	idp    *mockoidc.MockOIDC
	hits   *int64
}

func newProviderRig(t *testing.T, db string, rules ...string) *providerRig {
	t.Helper()
	up, hits := echoUpstream(t)
	ln := listenLoopback(t)
	base := "http://" + ln.Addr().String()
	gh := oauthtest.NewGitHub(oauthtest.Client{ID: "gh-id", Secret: "gh-secret", RedirectURL: base + "/auth/callback/github"}, nil)
	t.Cleanup(gh.Close)
	goog := oauthtest.NewGoogle(oauthtest.Client{ID: "goog-id", Secret: "goog-secret", RedirectURL: base + "/auth/callback/google"}, nil)
	t.Cleanup(goog.Close)
	goog.SetIssuer("https://accounts.google.com")
	idp := oauthtest.RunOIDC(t, nil)
	if db == "" {
		db = filepath.Join(t.TempDir(), "g.db")
	}
	args := append([]string{"--upstream", up.URL,
		"--github-client-id", "gh-id", "--github-client-secret", "gh-secret",
		"--github-auth-url", gh.AuthURL(), "--github-token-url", gh.TokenURL(), "--github-api-url", gh.APIURL(),
		"--google-client-id", "goog-id", "--google-client-secret", "goog-secret",
		"--google-auth-url", goog.AuthURL(), "--google-token-url", goog.TokenURL(),
		"--google-userinfo-url", goog.UserinfoURL(), "--google-jwks-url", goog.JWKSURL(),
		"--oidc-issuer-url", idp.Issuer(), "--oidc-client-id", idp.ClientID, "--oidc-client-secret", idp.ClientSecret,
		"--oidc-scopes", "openid email profile groups",
	}, rules...)
	g := startGatehouseOn(t, ln, db, nil, args...)
	return &providerRig{t: t, g: g, github: gh, google: goog, idp: idp, hits: hits}
}

// signIn runs /auth/login/{provider}?rd=/app through the provider and back
// with c; it returns the callback's status and, on success, where it sends
// the browser, otherwise the problem code.
func (r *providerRig) signIn(c *http.Client, provider string) (int, string) {
	r.t.Helper()
	return r.flow(c, r.g.URL+"/auth/login/"+provider+"?rd=/app")
}

func (r *providerRig) flow(c *http.Client, next string) (int, string) {
	r.t.Helper()
	for range 4 {
		resp, err := c.Get(next)
		if err != nil {
			r.t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		if resp.StatusCode/100 != 3 {
			var p struct {
				Code string `json:"code"`
			}
			_ = json.Unmarshal(body, &p)
			return resp.StatusCode, p.Code
		}
		if strings.HasPrefix(loc, "/") {
			return resp.StatusCode, loc
		}
		next = loc
	}
	r.t.Fatalf("%s: too many redirects", next)
	return 0, ""
}

// upstream requests /app with forged copies of X-Forwarded-Groups (in both
// spellings) and returns the status and, when it reached the upstream, the
// X-Forwarded-Groups values the upstream received.
func (r *providerRig) upstream(c *http.Client) (int, []string) {
	r.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.g.URL+"/app", nil)
	req.Header.Set("X-Forwarded-Groups", "oidc:forged,github:acme")
	req.Header["X_Forwarded_Groups"] = []string{"google:corp.com"}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	var echo struct {
		Header http.Header `json:"header"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&echo); err != nil {
		r.t.Fatal(err)
	}
	var groups []string
	for name, v := range echo.Header {
		if headerEqual(name, "x-forwarded-groups") {
			groups = append(groups, v...)
		}
	}
	return resp.StatusCode, groups
}

// users lists the emails of the accounts in the store.
func (r *providerRig) users() []string {
	r.t.Helper()
	list, err := r.g.srv.store.ListUsers(r.t.Context())
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, u := range list {
		out = append(out, u.Email)
	}
	slices.Sort(out)
	return out
}

// headerEqual compares header names ignoring case and reading "_" as "-".
func headerEqual(a, b string) bool {
	return strings.EqualFold(strings.ReplaceAll(a, "_", "-"), strings.ReplaceAll(b, "_", "-"))
}

// account is one provider account of a table: which provider, what it
// says, and what Gatehouse must make of it.
type account struct {
	name     string
	provider string
	github   oauthtest.Account // github and google
	oidc     mockoidc.User     // oidc
	status   int               // of the callback
	code     string            // problem code when refused
	groups   string            // X-Forwarded-Groups at the upstream ("" : absent)
}

func (r *providerRig) next(a account) {
	switch a.provider {
	case "github":
		r.github.SetNext(a.github)
	case "google":
		r.google.SetNext(a.github)
	case "oidc":
		r.idp.QueueUser(a.oidc)
	}
}

// check signs the account in with a fresh browser and checks the answer,
// the upstream's view and that a refused account was not created.
func (r *providerRig) check(a account) {
	r.t.Helper()
	before := r.users()
	r.next(a)
	c := newClient()
	status, got := r.signIn(c, a.provider)
	if a.status == http.StatusSeeOther {
		if status != http.StatusSeeOther || got != "/app" {
			r.t.Errorf("%s: sign-in %d %q, want 303 to /app", a.name, status, got)
			return
		}
		hits := *r.hits
		code, groups := r.upstream(c)
		switch {
		case code != http.StatusOK || *r.hits != hits+1:
			r.t.Errorf("%s: /app %d, want 200 from the upstream", a.name, code)
		case a.groups == "" && len(groups) != 0:
			r.t.Errorf("%s: upstream got X-Forwarded-Groups %q, want none", a.name, groups)
		case a.groups != "" && !slices.Equal(groups, []string{a.groups}):
			r.t.Errorf("%s: upstream got X-Forwarded-Groups %q, want exactly %q", a.name, groups, a.groups)
		}
		return
	}
	if status != a.status || got != a.code {
		r.t.Errorf("%s: sign-in %d %q, want %d %s", a.name, status, got, a.status, a.code)
	}
	if after := r.users(); !slices.Equal(before, after) {
		r.t.Errorf("%s: refused, yet the accounts went from %q to %q", a.name, before, after)
	}
	if code, _ := r.upstream(c); code == http.StatusOK {
		r.t.Errorf("%s: refused, yet /app reached the upstream", a.name)
	}
}

func ghAccount(id, email string, orgs, teams []string) oauthtest.Account {
	return oauthtest.Account{Subject: id, Email: email, EmailVerified: true, Orgs: orgs, Teams: teams}
}

// five orgs before the one that matters: three pages of two on the fake.
var fillerOrgs = []string{"a1", "a2", "a3", "a4", "a5"}

func githubAccounts() []account {
	return []account{
		{name: "org member on page 3", provider: "github",
			github: ghAccount("101", "m1@elsewhere.io", append(slices.Clone(fillerOrgs), "ACME"), nil),
			status: http.StatusSeeOther, groups: "github:acme"},
		{name: "team member on page 3", provider: "github",
			github: ghAccount("102", "m2@elsewhere.io", nil, []string{"x/a", "y/b", "z/c", "w/d", "Acme/Core"}),
			status: http.StatusSeeOther, groups: "github:acme/core"},
		{name: "org and team member, other memberships not forwarded", provider: "github",
			github: ghAccount("103", "m3@elsewhere.io", []string{"acme", "other"}, []string{"acme/core", "acme/ops"}),
			status: http.StatusSeeOther, groups: "github:acme,github:acme/core"},
		{name: "look-alike orgs and another team of the org", provider: "github",
			github: ghAccount("104", "m4@elsewhere.io", []string{"acme-corp", "evilacme", "acm", "acme2"}, []string{"acme/core-x", "acme/ops", "other/core"}),
			status: http.StatusForbidden, code: "access_denied"},
	}
}

func googleAccounts() []account {
	return []account{
		{name: "hd corp.com in the ID token", provider: "google",
			github: oauthtest.Account{Subject: "g1", Email: "ann@corp.com", EmailVerified: true, HostedDomain: "corp.com"},
			status: http.StatusSeeOther, groups: "google:corp.com"},
		{name: "hd in another case", provider: "google",
			github: oauthtest.Account{Subject: "g2", Email: "bea@corp.com", EmailVerified: true, HostedDomain: "CORP.com"},
			status: http.StatusSeeOther, groups: "google:corp.com"},
		{name: "consumer account with a corp.com address, no hd", provider: "google",
			github: oauthtest.Account{Subject: "g3", Email: "cid@corp.com", EmailVerified: true},
			status: http.StatusForbidden, code: "access_denied"},
		{name: "hd of a look-alike domain", provider: "google",
			github: oauthtest.Account{Subject: "g4", Email: "dan@evilcorp.com", EmailVerified: true, HostedDomain: "evilcorp.com"},
			status: http.StatusForbidden, code: "access_denied"},
		{name: "hd of a subdomain", provider: "google",
			github: oauthtest.Account{Subject: "g5", Email: "eve@eu.corp.com", EmailVerified: true, HostedDomain: "eu.corp.com"},
			status: http.StatusForbidden, code: "access_denied"},
		{name: "hd claimed by userinfo only", provider: "google",
			github: oauthtest.Account{Subject: "g6", Email: "fay@corp.com", EmailVerified: true, UserinfoHostedDomain: "corp.com"},
			status: http.StatusForbidden, code: "access_denied"},
	}
}

func oidcAccounts() []account {
	return []account{
		{name: "in an allowed group", provider: "oidc",
			oidc:   &mockoidc.MockUser{Subject: "o1", Email: "kim@idp.example", EmailVerified: true, Groups: []string{"eng", "admins", "Ops Team"}},
			status: http.StatusSeeOther, groups: "oidc:Ops Team,oidc:admins,oidc:eng"},
		{name: "allowed group in another case", provider: "oidc",
			oidc:   &mockoidc.MockUser{Subject: "o2", Email: "lee@idp.example", EmailVerified: true, Groups: []string{"Admins"}},
			status: http.StatusForbidden, code: "access_denied"},
		{name: "no group", provider: "oidc",
			oidc:   &mockoidc.MockUser{Subject: "o3", Email: "max@idp.example", EmailVerified: true},
			status: http.StatusForbidden, code: "access_denied"},
		{name: "group name smuggling the allowed one after a comma", provider: "oidc",
			oidc:   oauthtest.ClaimsUser{Sub: "o4", Extra: map[string]any{"email": "ned@idp.example", "email_verified": true, "groups": []string{"eng,admins", "x,oidc:admins"}}},
			status: http.StatusForbidden, code: "access_denied"},
		{name: "group name with a control byte or spaces", provider: "oidc",
			oidc:   oauthtest.ClaimsUser{Sub: "o5", Extra: map[string]any{"email": "ola@idp.example", "email_verified": true, "groups": []string{"admins\n", "admins\x00", " admins", "admins\r\nX-Evil: 1"}}},
			status: http.StatusForbidden, code: "access_denied"},
		{name: "groups claim as one string", provider: "oidc",
			oidc:   oauthtest.ClaimsUser{Sub: "o6", Extra: map[string]any{"email": "pia@idp.example", "email_verified": true, "groups": "admins"}},
			status: http.StatusSeeOther, groups: "oidc:admins"},
	}
}

// Each provider rule alone, end to end through the flags: GitHub org and
// team membership read across pages of /user/orgs and /user/teams, the
// Google hd claim from the verified ID token only, OIDC groups with
// --allow-group. A matching account gets in with exactly the groups of
// the contract at the upstream (and never the client's copy); a
// non-matching one is refused with 403 access_denied and no account.
func TestProviderRulesAloneEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rules    []string
		accounts []account
	}{
		{"github", []string{"--github-org", "acme", "--github-team", "ACME/core"}, githubAccounts()},
		{"google", []string{"--google-hosted-domain", "corp.com"}, googleAccounts()},
		{"oidc", []string{"--allow-group", "admins", "--allow-group", "Ops Team"}, oidcAccounts()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newProviderRig(t, "", tc.rules...)
			for _, a := range tc.accounts {
				r.check(a)
			}
		})
	}
}

// All rules together, with an email domain: each provider's matching
// account still gets in with its own groups only; a domain match lets a
// provider account without groups in, with no X-Forwarded-Groups; the
// non-matching ones stay out.
func TestProviderRulesTogetherEndToEnd(t *testing.T) {
	r := newProviderRig(t, "", "--github-org", "acme", "--github-team", "acme/core",
		"--google-hosted-domain", "corp.com", "--allow-group", "admins", "--allow-group", "Ops Team",
		"--allow-email-domain", "partner.example")
	var all []account
	for _, list := range [][]account{githubAccounts(), googleAccounts(), oidcAccounts()} {
		all = append(all, list...)
	}
	all = append(all,
		account{name: "github: no org, partner address", provider: "github",
			github: ghAccount("201", "gus@partner.example", []string{"other"}, nil), status: http.StatusSeeOther},
		account{name: "google: no hd, partner address", provider: "google",
			github: oauthtest.Account{Subject: "g20", Email: "hal@partner.example", EmailVerified: true}, status: http.StatusSeeOther},
		account{name: "oidc: groups not allowed but forwarded, partner address", provider: "oidc",
			oidc:   &mockoidc.MockUser{Subject: "o20", Email: "ivy@partner.example", EmailVerified: true, Groups: []string{"eng"}},
			status: http.StatusSeeOther, groups: "oidc:eng"},
		account{name: "oidc: partner address not verified", provider: "oidc",
			oidc:   &mockoidc.MockUser{Subject: "o21", Email: "jon@partner.example", EmailVerified: false},
			status: http.StatusForbidden, code: "access_denied"},
		account{name: "google: partner address not verified", provider: "google",
			github: oauthtest.Account{Subject: "g21", Email: "kay@partner.example"}, status: http.StatusForbidden, code: "access_denied"},
		account{name: "github: partner address not verified", provider: "github",
			github: oauthtest.Account{Subject: "202", Email: "joe@partner.example"}, status: http.StatusForbidden, code: "access_denied"},
	)
	for _, a := range all {
		r.check(a)
	}
}

// With --github-org set, a token granted without read:org is refused at
// sign-in (403 insufficient_scope): memberships are never guessed, and no
// account is created, even for an org member.
func TestGitHubWithoutReadOrgEndToEnd(t *testing.T) {
	r := newProviderRig(t, "", "--github-org", "acme")
	r.github.GrantNextWithout("read:org")
	r.check(account{name: "org member, read:org withheld", provider: "github",
		github: ghAccount("301", "m@elsewhere.io", []string{"acme"}, nil),
		status: http.StatusForbidden, code: "insufficient_scope"})
	if scope := r.github.AuthorizeRequests()[0].Get("scope"); !strings.Contains(scope, "read:org") {
		t.Errorf("authorization scope %q lacks read:org", scope)
	}
	// The same account with the scope granted gets in.
	r.check(account{name: "org member, read:org granted", provider: "github",
		github: ghAccount("301", "m@elsewhere.io", []string{"acme"}, nil),
		status: http.StatusSeeOther, groups: "github:acme"})
}

// Without a policy the groups still reach the upstream as the contract
// says (oidc groups always; github and google ones only for configured
// orgs, teams and domains, so none here), and absent when there are none.
func TestGroupsWithoutPolicyEndToEnd(t *testing.T) {
	r := newProviderRig(t, "", "--open-signup")
	for _, a := range []account{
		{name: "oidc groups", provider: "oidc",
			oidc:   &mockoidc.MockUser{Subject: "o1", Email: "kim@idp.example", EmailVerified: true, Groups: []string{"b", "a", "a"}},
			status: http.StatusSeeOther, groups: "oidc:a,oidc:b"},
		{name: "oidc without groups", provider: "oidc",
			oidc:   &mockoidc.MockUser{Subject: "o2", Email: "lee@idp.example", EmailVerified: true},
			status: http.StatusSeeOther},
		{name: "github orgs not configured", provider: "github",
			github: ghAccount("1", "gh@idp.example", []string{"acme"}, []string{"acme/core"}), status: http.StatusSeeOther},
		{name: "google hd not configured", provider: "google",
			github: oauthtest.Account{Subject: "g1", Email: "ann@corp.com", EmailVerified: true, HostedDomain: "corp.com"}, status: http.StatusSeeOther},
	} {
		r.check(a)
	}
	if scope := r.github.AuthorizeRequests()[0].Get("scope"); strings.Contains(scope, "read:org") {
		t.Errorf("read:org asked for without --github-org or --github-team: %q", scope)
	}
}

// hasSession reports whether c holds a session cookie for the rig.
func (r *providerRig) hasSession(c *http.Client) bool {
	u, _ := url.Parse(r.g.URL)
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "gatehouse_session" && ck.Value != "" {
			return true
		}
	}
	return false
}

// Sign-up through the real wiring. With no policy and no --open-signup an
// unknown identity of any provider gets 403 signup_closed and nothing is
// written (no user, no identity, no session), while an existing user who
// linked an identity still signs in with it. With the policy on, an
// unknown identity becomes an account only when it passes; the linked
// identity of an existing user whose address the policy does not match
// signs in when the sign-in earns an allowed group, and is refused when
// it does not.
func TestSignupEndToEnd(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	addUser(t, db, "alice@example.com", testPassword)
	r := newProviderRig(t, db)
	for _, a := range []account{
		{name: "unknown github identity", provider: "github", github: ghAccount("500", "new@example.com", nil, nil),
			status: http.StatusForbidden, code: "signup_closed"},
		{name: "unknown google identity", provider: "google", github: oauthtest.Account{Subject: "g500", Email: "new2@example.com", EmailVerified: true},
			status: http.StatusForbidden, code: "signup_closed"},
		{name: "unknown oidc identity", provider: "oidc", oidc: &mockoidc.MockUser{Subject: "o500", Email: "new3@example.com", EmailVerified: true},
			status: http.StatusForbidden, code: "signup_closed"},
	} {
		r.next(a)
		c := newClient()
		if status, code := r.signIn(c, a.provider); status != a.status || code != a.code {
			t.Errorf("%s: %d %q, want %d %s", a.name, status, code, a.status, a.code)
		}
		if r.hasSession(c) {
			t.Errorf("%s: a session cookie was set", a.name)
		}
	}
	if got := r.users(); !slices.Equal(got, []string{"alice@example.com"}) {
		t.Errorf("accounts after refused sign-ups: %q", got)
	}
	for _, id := range [][2]string{{"github", "500"}, {"google", "g500"}} {
		if _, err := r.g.srv.store.UserByIdentity(t.Context(), id[0], id[1]); err == nil {
			t.Errorf("identity %s %s was written", id[0], id[1])
		}
	}

	// Alice links GitHub and OIDC accounts, then signs in with each.
	alice := newClient()
	login(t, alice, r.g.URL, "alice@example.com", testPassword)
	r.github.SetNext(ghAccount("600", "alice.gh@example.com", []string{"acme"}, nil))
	if status, loc := r.flow(alice, r.g.URL+"/auth/link/github?rd=/auth/account"); status != http.StatusSeeOther || loc != "/auth/account" {
		t.Fatalf("link github: %d %q", status, loc)
	}
	r.idp.QueueUser(&mockoidc.MockUser{Subject: "o600", Email: "alice.sso@example.com", EmailVerified: true})
	if status, loc := r.flow(alice, r.g.URL+"/auth/link/oidc?rd=/auth/account"); status != http.StatusSeeOther || loc != "/auth/account" {
		t.Fatalf("link oidc: %d %q", status, loc)
	}
	for _, provider := range []string{"github", "oidc"} {
		if provider == "github" {
			r.github.SetNext(ghAccount("600", "alice.gh@example.com", []string{"acme"}, nil))
		} else {
			r.idp.QueueUser(&mockoidc.MockUser{Subject: "o600", Email: "alice.sso@example.com", EmailVerified: true})
		}
		c := newClient()
		if status, loc := r.signIn(c, provider); status != http.StatusSeeOther || loc != "/app" {
			t.Fatalf("alice signs in with linked %s, sign-up closed: %d %q", provider, status, loc)
		}
		if status, body := get(t, c, r.g.URL+"/app"); status != http.StatusOK || !strings.Contains(body, `"X-Forwarded-Email":["alice@example.com"]`) {
			t.Errorf("alice through %s: %d %s", provider, status, body)
		}
	}
	r.g.Stop()

	// The same database with the policy on.
	r = newProviderRig(t, db, "--github-org", "acme", "--allow-email-domain", "corp.com")
	for _, a := range []account{
		{name: "unknown identity, address in the domain", provider: "github", github: ghAccount("700", "bob@corp.com", nil, nil),
			status: http.StatusSeeOther},
		{name: "unknown identity, address at a look-alike domain", provider: "github", github: ghAccount("701", "eve@evilcorp.com", nil, nil),
			status: http.StatusForbidden, code: "access_denied"},
		{name: "unknown identity, unverified address in the domain", provider: "github", github: oauthtest.Account{Subject: "702", Email: "mallory@corp.com"},
			status: http.StatusForbidden, code: "access_denied"},
		{name: "unknown identity, org member", provider: "github", github: ghAccount("703", "org@elsewhere.io", []string{"acme"}, nil),
			status: http.StatusSeeOther, groups: "github:acme"},
		{name: "alice's linked identity, out of the org", provider: "github", github: ghAccount("600", "alice.gh@example.com", []string{"other"}, nil),
			status: http.StatusForbidden, code: "access_denied"},
		{name: "alice's linked identity, org member", provider: "github", github: ghAccount("600", "alice.gh@example.com", []string{"acme"}, nil),
			status: http.StatusSeeOther, groups: "github:acme"},
	} {
		r.check(a)
	}
	if got, want := r.users(), []string{"alice@example.com", "bob@corp.com", "org@elsewhere.io"}; !slices.Equal(got, want) {
		t.Errorf("accounts: %q, want %q", got, want)
	}
}

// A provider-verified address is used for the policy and the account only
// when it is a plain address that lower-cases to itself in ASCII terms:
// a Unicode letter that lower-cases into ASCII (KELVIN SIGN → k, CAPITAL
// I WITH DOT → i) would let the owner of another mailbox match an allowed
// address or domain and reach the upstream as that address; spaces,
// control bytes, commas, quotes and a second @ would let an address slip
// past the domain rule or be read otherwise by the upstream. Such an
// address counts as not verified: refused, nothing created. Plain ASCII
// in any case still matches.
func TestProviderEmailTricksEndToEnd(t *testing.T) {
	emails := filepath.Join(t.TempDir(), "emails.txt")
	if err := os.WriteFile(emails, []byte("kim@corp.com\ninfo@corp.com\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := newProviderRig(t, "", "--allow-emails-file", emails, "--allow-email-domain", "kcorp.com", "--allow-email-domain", ".corp.com")
	refused := func(n int, email string) account {
		return account{name: fmt.Sprintf("%q", email), provider: "oidc",
			oidc:   oauthtest.ClaimsUser{Sub: fmt.Sprintf("t%d", n), Extra: map[string]any{"email": email, "email_verified": true}},
			status: http.StatusForbidden, code: "access_denied"}
	}
	var cases []account
	for i, email := range []string{
		"\u212Aim@corp.com",         // KELVIN SIGN
		"\u0130nfo@corp.com",        // LATIN CAPITAL LETTER I WITH DOT ABOVE
		"ann@\u212Acorp.com",        // KELVIN SIGN in the domain
		"kim@corp.com\n",            // trailing control byte
		" kim@corp.com",             // leading space
		"kim@corp.com\x00",          // NUL
		"x@evil.com,y@kcorp.com",    // a list, the last domain allowed
		"x@evil.com@kcorp.com",      // two @
		`"x@evil.com"@kcorp.com`,    // quoted local part
		"x@evil.com\r\n@kcorp.com",  // header splitting
		"kim@corp.com.",             // trailing dot
		"eve@evilcorp.com",          // look-alike of .corp.com
		"eve@corp.com.evil.example", // corp.com inside another domain
	} {
		cases = append(cases, refused(i, email))
	}
	cases = append(cases,
		account{name: "ASCII upper case", provider: "oidc",
			oidc:   oauthtest.ClaimsUser{Sub: "ok1", Extra: map[string]any{"email": "KIM@Corp.COM", "email_verified": true}},
			status: http.StatusSeeOther},
		account{name: "subdomain of .corp.com", provider: "oidc",
			oidc:   oauthtest.ClaimsUser{Sub: "ok2", Extra: map[string]any{"email": "lou@EU.corp.com", "email_verified": true}},
			status: http.StatusSeeOther},
	)
	for _, a := range cases {
		r.check(a)
	}
	if got, want := r.users(), []string{"kim@corp.com", "lou@eu.corp.com"}; !slices.Equal(got, want) {
		t.Errorf("accounts %q, want %q", got, want)
	}
}

// A session whose user the policy now refuses (the address left the
// emails file): protected paths answer 403 access_denied and forward
// nothing; a public path is served as to nobody (no identity, no groups,
// and the forged copies still stripped); /auth/me and /auth/account still
// show the user their own account, and sign-out works, so that they can
// sign in as someone else.
func TestRefusedSessionEndToEnd(t *testing.T) {
	emails := filepath.Join(t.TempDir(), "emails.txt")
	if err := os.WriteFile(emails, []byte("ivy@partner.example\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := newProviderRig(t, "", "--allow-emails-file", emails, "--public-path", "/pub")
	r.idp.QueueUser(&mockoidc.MockUser{Subject: "o1", Email: "ivy@partner.example", EmailVerified: true, Groups: []string{"eng"}})
	c := newClient()
	if status, loc := r.signIn(c, "oidc"); status != http.StatusSeeOther || loc != "/app" {
		t.Fatalf("sign-in: %d %q", status, loc)
	}
	if code, groups := r.upstream(c); code != http.StatusOK || !slices.Equal(groups, []string{"oidc:eng"}) {
		t.Fatalf("before: %d %q", code, groups)
	}

	if err := os.WriteFile(emails, []byte("# nobody\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.g.srv.policy.Refresh()

	hits := *r.hits
	if code, _ := r.upstream(c); code != http.StatusForbidden || *r.hits != hits {
		t.Errorf("protected path: %d (upstream hits %d → %d), want 403 and nothing forwarded", code, hits, *r.hits)
	}
	status, h, body := do(t, c, "GET", r.g.URL+"/app", "", "", "Accept", "text/html")
	if status != http.StatusForbidden || !strings.Contains(body, `action="/auth/logout"`) || h.Get("Cache-Control") == "" {
		t.Errorf("browser on a protected path: %d %q %s", status, h.Get("Cache-Control"), body)
	}
	if app := strings.TrimPrefix(r.g.URL, "http://"); !strings.Contains(body, "<title>Not allowed · "+app+"</title>") || !strings.Contains(body, `<p class="app">`+app+`</p>`) {
		t.Errorf("the access-denied page does not name the app (--app-name defaults to %s): %s", app, body)
	}
	status, _, body = do(t, c, "GET", r.g.URL+"/pub/x", "", "", "X-Forwarded-Groups", "oidc:admins", "X-Forwarded-Email", "boss@corp.com")
	if status != http.StatusOK {
		t.Fatalf("public path: %d", status)
	}
	var echo struct {
		Header http.Header `json:"header"`
	}
	if err := json.Unmarshal([]byte(body), &echo); err != nil {
		t.Fatal(err)
	}
	for name := range echo.Header {
		if headerEqual(name, "x-forwarded-groups") || headerEqual(name, "x-forwarded-email") || headerEqual(name, "x-forwarded-user") {
			t.Errorf("public path for a refused user carried %s: %q", name, echo.Header[name])
		}
	}
	if status, body := get(t, c, r.g.URL+"/auth/me"); status != http.StatusOK || !strings.Contains(body, `"email":"ivy@partner.example"`) {
		t.Errorf("/auth/me: %d %s", status, body)
	}
	if status, _ := get(t, c, r.g.URL+"/auth/account"); status != http.StatusOK {
		t.Errorf("/auth/account: %d", status)
	}
	if status, _, _ := do(t, c, "POST", r.g.URL+"/auth/logout", "application/x-www-form-urlencoded", "", "Origin", r.g.URL); status/100 != 2 && status/100 != 3 {
		t.Errorf("sign-out: %d", status)
	}
	if status, _ := get(t, c, r.g.URL+"/auth/me"); status != http.StatusUnauthorized {
		t.Errorf("/auth/me after sign-out: %d", status)
	}
}

// With an ID token that carries no email, Gatehouse reads the address from
// Google's userinfo; an hd there still never counts: only the verified ID
// token's hd earns google:HD.
func TestGoogleUserinfoHostedDomainNeverCounts(t *testing.T) {
	r := newProviderRig(t, "", "--google-hosted-domain", "corp.com")
	r.google.OmitEmailClaims(true)
	r.check(account{name: "hd in userinfo only", provider: "google",
		github: oauthtest.Account{Subject: "g1", Email: "fay@corp.com", EmailVerified: true, UserinfoHostedDomain: "corp.com"},
		status: http.StatusForbidden, code: "access_denied"})
	r.check(account{name: "hd in the ID token, email from userinfo", provider: "google",
		github: oauthtest.Account{Subject: "g2", Email: "gil@corp.com", EmailVerified: true, HostedDomain: "corp.com"},
		status: http.StatusSeeOther, groups: "google:corp.com"})
	if got := r.users(); !slices.Equal(got, []string{"gil@corp.com"}) {
		t.Errorf("accounts %q, want only gil's (the address read from userinfo)", got)
	}
}

// Org, team and hosted-domain names compare case-insensitively in ASCII
// only: a name the provider reports with a Unicode letter that folds to
// an ASCII one (KELVIN SIGN for k) is another name and earns nothing.
func TestProviderNamesFoldASCIIOnly(t *testing.T) {
	r := newProviderRig(t, "", "--github-org", "kube", "--github-team", "kube/ops", "--google-hosted-domain", "kcorp.com")
	r.check(account{name: "github org and team spelled with a KELVIN SIGN", provider: "github",
		github: ghAccount("1", "m@elsewhere.io", []string{"\u212Aube"}, []string{"\u212Aube/ops"}),
		status: http.StatusForbidden, code: "access_denied"})
	r.check(account{name: "google hd spelled with a KELVIN SIGN", provider: "google",
		github: oauthtest.Account{Subject: "g1", Email: "ann@kcorp.com", EmailVerified: true, HostedDomain: "\u212Acorp.com"},
		status: http.StatusForbidden, code: "access_denied"})
	r.check(account{name: "github org in upper case", provider: "github",
		github: ghAccount("2", "n@elsewhere.io", []string{"KUBE"}, []string{"Kube/OPS"}),
		status: http.StatusSeeOther, groups: "github:kube,github:kube/ops"})
}
