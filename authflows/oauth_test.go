package authflows

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

func (e *oauthEnv) providerFailures(provider string) []string {
	if provider == "google" {
		return e.google.Failures()
	}
	return e.github.Failures()
}

var bothProviders = []string{"google", "github"}

// Link happy path: a signed-in user attaches a provider account. The session
// and its cookie stay as they were; no session cookie is set; /auth/me lists
// the identity.
func TestOAuthLinkKeepsSession(t *testing.T) {
	for _, provider := range bothProviders {
		t.Run(provider, func(t *testing.T) {
			e := newOAuthEnv(t, oauthEnvOptions{})
			u := e.newUser("Alice@Example.com", true)
			b := e.newBrowser()
			sessionID := b.signIn(u)
			e.setNext(provider, oauthtest.Account{Subject: "4242", Email: "alice.work@example.com", EmailVerified: true})

			callback := b.authorize("/auth/link/" + provider + "?rd=/app/settings")
			a := b.get(callback)
			if a.status != http.StatusSeeOther || a.location() != "/app/settings" {
				t.Fatalf("callback: %d to %q (%s), want 303 to /app/settings", a.status, a.location(), a.body)
			}
			if c, ok := a.cookie(oauthCookieName); ok {
				t.Fatalf("link callback set the session cookie: %v", c)
			}
			if c, ok := a.cookie(transactionCookie); !ok || c.MaxAge >= 0 {
				t.Errorf("transaction cookie not expired by the callback: %v", c)
			}
			if got := b.sessionID(); got != sessionID {
				t.Fatalf("session cookie changed")
			}
			if _, err := e.Store.Session(t.Context(), storage.HashSecret(sessionID)); err != nil {
				t.Fatalf("session record after link: %v", err)
			}
			me, ok := b.me()
			if !ok {
				t.Fatal("the old session cookie no longer works after linking")
			}
			want := []identityAnswer{{Provider: provider, Subject: "4242", Email: "alice.work@example.com"}}
			if me.ID != u.ID || !slices.Equal(me.Identities, want) {
				t.Errorf("/auth/me = %+v, want user %s with %+v", me, u.ID, want)
			}
			if f := e.providerFailures(provider); len(f) > 0 {
				t.Errorf("fake provider refused: %v", f)
			}
			if !e.hasEvent("oauth_linked") {
				t.Errorf("no oauth_linked event in %s", e.Logs)
			}
		})
	}
}

// Login with an unknown identity and a verified email creates a
// password-less user and signs it in.
func TestOAuthLoginCreatesUser(t *testing.T) {
	for _, provider := range bothProviders {
		t.Run(provider, func(t *testing.T) {
			e := newOAuthEnv(t, oauthEnvOptions{})
			e.setNext(provider, oauthtest.Account{Subject: "1001", Email: "New.User@Example.com", EmailVerified: true, Login: "newbie"})
			b := e.newBrowser()
			a := b.flow("/auth/login/" + provider + "?rd=/welcome")
			if a.status != http.StatusSeeOther || a.location() != "/welcome" {
				t.Fatalf("callback: %d to %q (%s)", a.status, a.location(), a.body)
			}
			c, ok := a.cookie(oauthCookieName)
			if !ok || c.Value == "" || !c.HttpOnly || c.Path != "/" || c.SameSite != http.SameSiteLaxMode {
				t.Fatalf("login callback session cookie = %v", c)
			}
			me, ok := b.me()
			if !ok {
				t.Fatal("no session after OAuth login")
			}
			if me.Email != "new.user@example.com" || me.HasPassword {
				t.Errorf("user = %+v, want new.user@example.com without password", me)
			}
			want := []identityAnswer{{Provider: provider, Subject: "1001", Email: "new.user@example.com"}}
			if !slices.Equal(me.Identities, want) {
				t.Errorf("identities = %+v, want %+v", me.Identities, want)
			}
			if !e.hasEvent("oauth_user_created") || !e.hasEvent("oauth_login") {
				t.Errorf("events missing in %s", e.Logs)
			}
		})
	}
}

// Login with a linked identity signs in its user, with a new session id even
// when the browser already had one (SS4).
func TestOAuthLoginSignsInLinkedUser(t *testing.T) {
	for _, provider := range bothProviders {
		t.Run(provider, func(t *testing.T) {
			e := newOAuthEnv(t, oauthEnvOptions{})
			u := e.newUser("bob@example.com", true)
			owner := e.newBrowser()
			owner.signIn(u)
			e.setNext(provider, oauthtest.Account{Subject: "77", Email: "bob@example.com", EmailVerified: true})
			if a := owner.flow("/auth/link/" + provider); a.status != http.StatusSeeOther {
				t.Fatalf("link: %d %s", a.status, a.body)
			}

			b := e.newBrowser()
			planted := b.signIn(e.newUser("someone.else@example.com", true))
			a := b.flow("/auth/login/" + provider)
			if a.status != http.StatusSeeOther || a.location() != "/" {
				t.Fatalf("login: %d to %q (%s)", a.status, a.location(), a.body)
			}
			me, ok := b.me()
			if !ok || me.ID != u.ID {
				t.Fatalf("signed in as %+v, want %s", me, u.ID)
			}
			if b.sessionID() == planted {
				t.Error("login kept the browser's previous session id")
			}
			if _, err := e.Store.Session(t.Context(), storage.HashSecret(planted)); err == nil {
				t.Error("the replaced session still exists")
			}
		})
	}
}

// OA1, OA2, OA3, OA11: the authorization request carries response_type=code,
// the client id, the configured redirect_uri, the minimal scopes, a state of
// at least 128 bits, a PKCE S256 challenge and (Google) a nonce; the token
// request carries the same redirect_uri and the matching verifier; the
// transaction cookie binds the flow to the browser.
func TestOAuthAuthorizationRequest(t *testing.T) {
	scopes := map[string]string{"google": "openid email profile", "github": "read:user user:email"}
	clientIDs := map[string]string{"google": googleClientID, "github": githubClientID}
	for _, provider := range bothProviders {
		t.Run(provider, func(t *testing.T) {
			e := newOAuthEnv(t, oauthEnvOptions{})
			e.setNext(provider, oauthtest.Account{Subject: "5", Email: "p@example.com", EmailVerified: true})
			b := e.newBrowser()
			a := b.get("/auth/login/" + provider + "?rd=/x")
			if a.status != http.StatusFound {
				t.Fatalf("start: %d %s", a.status, a.body)
			}
			loc, _ := url.Parse(a.location())
			q := loc.Query()
			redirectURI := e.base + "/auth/callback/" + provider
			checks := map[string]string{
				"response_type":         "code",
				"client_id":             clientIDs[provider],
				"redirect_uri":          redirectURI,
				"scope":                 scopes[provider],
				"code_challenge_method": "S256",
			}
			for k, want := range checks {
				if got := q.Get(k); got != want {
					t.Errorf("authorize %s = %q, want %q", k, got, want)
				}
			}
			if raw, err := base64.RawURLEncoding.DecodeString(q.Get("state")); err != nil || len(raw) < 16 {
				t.Errorf("state %q is not ≥128 random bits", q.Get("state"))
			}
			if (q.Get("nonce") != "") != (provider == "google") {
				t.Errorf("nonce = %q for %s", q.Get("nonce"), provider)
			}
			c, ok := a.cookie(transactionCookie)
			if !ok || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/auth/callback/" || c.MaxAge != 600 || c.Value == "" {
				t.Errorf("transaction cookie = %+v", c)
			}
			if strings.Contains(c.Value, q.Get("state")) {
				t.Error("the transaction cookie carries the state")
			}
			// The store keeps the flow by the state's hash, with the verifier and the purpose.
			flow, err := e.Store.TakeOAuthFlow(t.Context(), storage.HashSecret(q.Get("state")), e.Clock.Now())
			if err != nil {
				t.Fatalf("flow not stored under the state's hash: %v", err)
			}
			sum := sha256.Sum256([]byte(flow.Verifier))
			if base64.RawURLEncoding.EncodeToString(sum[:]) != q.Get("code_challenge") {
				t.Error("code_challenge is not S256 of the stored verifier")
			}
			if flow.Purpose != storage.PurposeLogin || flow.Provider != provider || flow.Redirect != "/x" ||
				flow.ExpiresAt.Sub(flow.CreatedAt) > 10*time.Minute || flow.BrowserHash != storage.HashSecret(c.Value) {
				t.Errorf("flow = %+v", flow)
			}
			if err := e.Store.CreateOAuthFlow(t.Context(), flow); err != nil {
				t.Fatal(err)
			}

			// Through the provider and back: the token request uses the same
			// redirect_uri and the verifier (the fake checks both).
			p := b.get(a.location())
			if r := b.get(p.location()); r.status != http.StatusSeeOther {
				t.Fatalf("callback: %d %s", r.status, r.body)
			}
			tokens := map[string][]url.Values{"google": e.google.TokenRequests(), "github": e.github.TokenRequests()}[provider]
			if len(tokens) != 1 || tokens[0].Get("redirect_uri") != redirectURI || tokens[0].Get("code_verifier") != flow.Verifier {
				t.Errorf("token requests = %v", tokens)
			}
			if f := e.providerFailures(provider); len(f) > 0 {
				t.Errorf("fake provider refused: %v", f)
			}
		})
	}
}

// The transaction cookie is Secure when the session cookie is.
func TestOAuthTransactionCookieSecure(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	e.Handler.cfg.CookieSecure = true
	if c := e.Handler.oauth.transactionCookie("v", 600); !c.Secure {
		t.Error("transaction cookie not Secure with CookieSecure")
	}
}

// OA2: a code redeemed with another verifier fails at the provider: 502.
func TestOAuthWrongVerifierFails(t *testing.T) {
	for _, provider := range bothProviders {
		t.Run(provider, func(t *testing.T) {
			e := newOAuthEnv(t, oauthEnvOptions{})
			e.setNext(provider, oauthtest.Account{Subject: "5", Email: "p@example.com", EmailVerified: true})
			b := e.newBrowser()
			callback := b.authorize("/auth/login/" + provider)
			hash := storage.HashSecret(stateOf(t, callback))
			flow, err := e.Store.TakeOAuthFlow(t.Context(), hash, e.Clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			flow.Verifier = newSecret()
			if err := e.Store.CreateOAuthFlow(t.Context(), flow); err != nil {
				t.Fatal(err)
			}
			a := b.get(callback)
			if a.status != http.StatusBadGateway || a.problemCode() != "provider_error" {
				t.Fatalf("callback: %d %s, want 502 provider_error", a.status, a.body)
			}
			if f := e.providerFailures(provider); len(f) != 1 || !strings.Contains(f[0], "PKCE") {
				t.Errorf("fake provider failures = %v, want the PKCE check", f)
			}
			if _, ok := b.me(); ok {
				t.Error("signed in despite the failed exchange")
			}
		})
	}
}

// A provider that cannot be reached, or answers an error instead of a code.
func TestOAuthProviderErrors(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	b := e.newBrowser()

	e.github.DenyNext("access_denied")
	if a := b.flow("/auth/login/github"); a.status != http.StatusBadRequest || a.problemCode() != "access_denied" {
		t.Errorf("access_denied: %d %s", a.status, a.body)
	}
	e.github.DenyNext("server_error")
	if a := b.flow("/auth/login/github"); a.status != http.StatusBadGateway || a.problemCode() != "provider_error" {
		t.Errorf("server_error: %d %s", a.status, a.body)
	}

	e.google.SetNext(oauthtest.Account{Subject: "9", Email: "g@example.com", EmailVerified: true})
	callback := b.authorize("/auth/login/google")
	e.google.Close()
	if a := b.get(callback); a.status != http.StatusBadGateway || a.problemCode() != "provider_error" {
		t.Errorf("token endpoint down: %d %s", a.status, a.body)
	}
	if _, ok := b.me(); ok {
		t.Error("signed in after provider errors")
	}
}

// 502 provider_error when the exchange worked but the user API fails:
// GitHub's GET /user or GET /user/emails, Google's userinfo (read when the
// ID token carries no email). Nobody is signed in and no user is created.
func TestOAuthUserAPIFailures(t *testing.T) {
	for _, tt := range []struct {
		provider, endpoint string
		status             int
	}{
		{"github", "user", http.StatusUnauthorized},
		{"github", "emails", http.StatusInternalServerError},
		{"google", "userinfo", http.StatusServiceUnavailable},
	} {
		t.Run(tt.provider+" "+tt.endpoint, func(t *testing.T) {
			e := newOAuthEnv(t, oauthEnvOptions{})
			e.google.OmitEmailClaims(true)
			e.setNext(tt.provider, oauthtest.Account{Subject: "808", Email: "api@example.com", EmailVerified: true})
			if tt.provider == "google" {
				e.google.FailNextAPI(tt.endpoint, tt.status)
			} else {
				e.github.FailNextAPI(tt.endpoint, tt.status)
			}
			b := e.newBrowser()
			a := b.flow("/auth/login/" + tt.provider)
			if a.status != http.StatusBadGateway || a.problemCode() != "provider_error" {
				t.Fatalf("callback: %d %s, want 502 provider_error", a.status, a.body)
			}
			if n := len(e.tokenRequests(tt.provider)); n != 1 {
				t.Errorf("%d token requests, want the exchange to have happened once", n)
			}
			if _, ok := a.cookie(oauthCookieName); ok {
				t.Error("session cookie set")
			}
			if users, _ := e.Store.ListUsers(t.Context()); len(users) != 0 {
				t.Errorf("users created: %+v", users)
			}
			// The same account signs in once the API answers again.
			if a := b.flow("/auth/login/" + tt.provider); a.status != http.StatusSeeOther {
				t.Errorf("after the failure: %d %s", a.status, a.body)
			}
		})
	}
}

// An HTML client gets an error page with the same status.
func TestOAuthErrorPagesForBrowsers(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	b := e.newBrowser()
	b.accept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	a := b.get("/auth/callback/google?state=nope&code=x")
	if a.status != http.StatusBadRequest || !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") || !strings.Contains(a.body, "invalid_state") {
		t.Errorf("callback page: %d %s %s", a.status, a.header.Get("Content-Type"), a.body)
	}
}

// OA5: identities are keyed by Google sub / GitHub numeric id. A changed
// email or login name at the provider still signs in the same user; another
// subject with the same email is another identity, never merged (OA6).
func TestOAuthIdentityKeyedBySubject(t *testing.T) {
	for _, provider := range bothProviders {
		t.Run(provider, func(t *testing.T) {
			e := newOAuthEnv(t, oauthEnvOptions{})
			e.setNext(provider, oauthtest.Account{Subject: "31337", Email: "first@example.com", EmailVerified: true, Login: "first"})
			first := e.newBrowser()
			if a := first.flow("/auth/login/" + provider); a.status != http.StatusSeeOther {
				t.Fatalf("first login: %d %s", a.status, a.body)
			}
			me1, _ := first.me()
			if len(me1.Identities) != 1 || me1.Identities[0].Subject != "31337" {
				t.Fatalf("identity = %+v, want subject 31337", me1.Identities)
			}

			e.setNext(provider, oauthtest.Account{Subject: "31337", Email: "renamed@example.com", EmailVerified: true, Login: "renamed"})
			again := e.newBrowser()
			if a := again.flow("/auth/login/" + provider); a.status != http.StatusSeeOther {
				t.Fatalf("login after rename: %d %s", a.status, a.body)
			}
			if me, _ := again.me(); me.ID != me1.ID {
				t.Errorf("renamed account signed in as %s, want %s", me.ID, me1.ID)
			}

			e.setNext(provider, oauthtest.Account{Subject: "31338", Email: "first@example.com", EmailVerified: true, Login: "first"})
			other := e.newBrowser()
			if a := other.flow("/auth/login/" + provider); a.status != http.StatusConflict || a.problemCode() != "account_exists" {
				t.Errorf("other subject, same email: %d %s, want 409 account_exists", a.status, a.body)
			}
		})
	}
}

// OA6: a new user needs a verified email. GitHub's verified address must be
// the primary one (the fake also lists a verified, non-primary address).
func TestOAuthUnverifiedEmail(t *testing.T) {
	for _, provider := range bothProviders {
		t.Run(provider, func(t *testing.T) {
			e := newOAuthEnv(t, oauthEnvOptions{})
			e.setNext(provider, oauthtest.Account{Subject: "600", Email: "unverified@example.com", EmailVerified: false})
			b := e.newBrowser()
			a := b.flow("/auth/login/" + provider)
			if a.status != http.StatusForbidden || a.problemCode() != "email_not_verified" {
				t.Fatalf("login: %d %s, want 403 email_not_verified", a.status, a.body)
			}
			if _, ok := a.cookie(oauthCookieName); ok {
				t.Error("session cookie set")
			}
			if users, _ := e.Store.ListUsers(t.Context()); len(users) != 0 {
				t.Errorf("users created: %+v", users)
			}
		})
	}
}

// An unverified address is not stored on a linked identity either, and
// linking needs no verified email.
func TestOAuthLinkUnverifiedEmailNotStored(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	u := e.newUser("carol@example.com", true)
	b := e.newBrowser()
	b.signIn(u)
	e.github.SetNext(oauthtest.Account{Subject: "8", Email: "carol@example.com", EmailVerified: false})
	if a := b.flow("/auth/link/github"); a.status != http.StatusSeeOther {
		t.Fatalf("link: %d %s", a.status, a.body)
	}
	if ids := e.identities(u.ID); len(ids) != 1 || ids[0].Email != "" || ids[0].Subject != "8" {
		t.Errorf("identities = %+v, want github 8 without email", ids)
	}
}

// OA6: a login whose verified email belongs to an existing user is refused
// with 409 account_exists and a page saying to sign in, then link; nothing
// is linked or created.
func TestOAuthAccountExists(t *testing.T) {
	for _, provider := range bothProviders {
		t.Run(provider, func(t *testing.T) {
			e := newOAuthEnv(t, oauthEnvOptions{})
			u := e.newUser("dave@example.com", true)
			e.setNext(provider, oauthtest.Account{Subject: "42", Email: "DAVE@example.com", EmailVerified: true})
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
			if users, _ := e.Store.ListUsers(t.Context()); len(users) != 1 {
				t.Errorf("users = %+v", users)
			}

			b.accept = "text/html"
			page := b.flow("/auth/login/" + provider)
			if page.status != http.StatusConflict || !strings.Contains(page.body, "Sign in, then link") || !strings.Contains(page.body, `href="/auth/login?rd=%2Fauth%2Faccount"`) {
				t.Errorf("account_exists page: %d %s", page.status, page.body)
			}
		})
	}
}

// A login flow started in a signed-in browser is a login, not a link: the
// purpose is fixed when the flow starts (OA1).
func TestOAuthLoginFlowNeverLinks(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	u := e.newUser("erin@example.com", true)
	b := e.newBrowser()
	b.signIn(u)
	e.google.SetNext(oauthtest.Account{Subject: "g-1", Email: "other@example.com", EmailVerified: true})
	if a := b.flow("/auth/login/google"); a.status != http.StatusSeeOther {
		t.Fatalf("login: %d %s", a.status, a.body)
	}
	if ids := e.identities(u.ID); len(ids) != 0 {
		t.Errorf("a login flow linked to the signed-in user: %+v", ids)
	}
	if me, _ := b.me(); me.ID == u.ID || me.Email != "other@example.com" {
		t.Errorf("signed in as %+v, want the new user", me)
	}
}

// OA8: an identity linked to another user is refused with 409
// identity_in_use, nothing changes and nothing about that user is revealed.
// Linking it again to its own user succeeds without change.
func TestOAuthLinkIdentityInUse(t *testing.T) {
	for _, provider := range bothProviders {
		t.Run(provider, func(t *testing.T) {
			e := newOAuthEnv(t, oauthEnvOptions{})
			owner := e.newUser("owner@example.com", true)
			ob := e.newBrowser()
			ob.signIn(owner)
			e.setNext(provider, oauthtest.Account{Subject: "500", Email: "shared@example.com", EmailVerified: true})
			if a := ob.flow("/auth/link/" + provider); a.status != http.StatusSeeOther {
				t.Fatalf("owner link: %d %s", a.status, a.body)
			}
			if a := ob.flow("/auth/link/" + provider + "?rd=/again"); a.status != http.StatusSeeOther || a.location() != "/again" {
				t.Fatalf("relink by owner: %d %s, want success", a.status, a.body)
			}

			other := e.newUser("other@example.com", true)
			b := e.newBrowser()
			sessionID := b.signIn(other)
			a := b.flow("/auth/link/" + provider)
			if a.status != http.StatusConflict || a.problemCode() != "identity_in_use" {
				t.Fatalf("link: %d %s, want 409 identity_in_use", a.status, a.body)
			}
			for _, leak := range []string{owner.ID, owner.Email, "shared@example.com"} {
				if strings.Contains(a.body, leak) {
					t.Errorf("answer reveals %q: %s", leak, a.body)
				}
			}
			if ids := e.identities(other.ID); len(ids) != 0 {
				t.Errorf("other user got %+v", ids)
			}
			if ids := e.identities(owner.ID); len(ids) != 1 {
				t.Errorf("owner identities = %+v", ids)
			}
			if b.sessionID() != sessionID {
				t.Error("session changed")
			}
		})
	}
}

// A user who already linked one account of a provider cannot link a second
// one; the first stays.
func TestOAuthLinkSecondAccountOfProvider(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	u := e.newUser("frank@example.com", true)
	b := e.newBrowser()
	b.signIn(u)
	e.github.SetNext(oauthtest.Account{Subject: "1", Email: "f1@example.com", EmailVerified: true})
	b.flow("/auth/link/github")
	e.github.SetNext(oauthtest.Account{Subject: "2", Email: "f2@example.com", EmailVerified: true})
	a := b.flow("/auth/link/github")
	if a.status != http.StatusConflict || a.problemCode() != "provider_already_linked" {
		t.Fatalf("second link: %d %s", a.status, a.body)
	}
	if ids := e.identities(u.ID); len(ids) != 1 || ids[0].Subject != "1" {
		t.Errorf("identities = %+v", ids)
	}
}

// OA10: the callback of a login and of a link honours a local rd and turns
// anything else into "/", the list of SECURITY.md included.
func TestOAuthCallbackRedirect(t *testing.T) {
	tests := []struct{ rd, want string }{
		{"/app/page?x=1&y=2", "/app/page?x=1&y=2"},
		{"/", "/"},
		{"", "/"},
		{"//evil.example", "/"},
		{"///evil.example", "/"},
		{"/\\evil.example", "/"},
		{"/%09/evil.example", "/"},
		{"/\t/evil.example", "/"},
		{"/%2f/evil.example", "/"},
		{"/%5cevil.example", "/"},
		{"https:evil.example", "/"},
		{"https://evil.example", "/"},
		{"javascript:alert(1)", "/"},
		{"https://gatehouse.test@evil.example", "/"},
		{"evil.example", "/"},
	}
	for _, purpose := range []string{"login", "link"} {
		t.Run(purpose, func(t *testing.T) {
			e := newOAuthEnv(t, oauthEnvOptions{})
			e.github.SetNext(oauthtest.Account{Subject: "10", Email: "rd@example.com", EmailVerified: true})
			b := e.newBrowser()
			if purpose == "link" {
				b.signIn(e.newUser("linker@example.com", true))
			}
			for _, tt := range tests {
				if purpose == "login" {
					b = e.newBrowser()
				}
				a := b.flow("/auth/" + purpose + "/github?rd=" + url.QueryEscape(tt.rd))
				if a.status != http.StatusSeeOther || a.location() != tt.want {
					t.Errorf("rd %q: %d to %q, want 303 to %q", tt.rd, a.status, a.location(), tt.want)
				}
			}
		})
	}
}

// Unknown and unconfigured providers answer 404 on every route.
func TestOAuthUnknownAndUnconfiguredProviders(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{providers: []string{"google"}})
	b := e.newBrowser()
	b.signIn(e.newUser("gina@example.com", true))
	for _, path := range []string{"/auth/login/%s", "/auth/link/%s", "/auth/callback/%s?state=x&code=y"} {
		for name, code := range map[string]string{"gitlab": "unknown_provider", "github": "provider_not_configured"} {
			target := strings.Replace(path, "%s", name, 1)
			if a := b.get(target); a.status != http.StatusNotFound || a.problemCode() != code {
				t.Errorf("GET %s: %d %s, want 404 %s", target, a.status, a.body, code)
			}
		}
	}
	if a := b.do(http.MethodDelete, "/auth/link/gitlab"); a.status != http.StatusNotFound || a.problemCode() != "unknown_provider" {
		t.Errorf("DELETE unknown: %d %s", a.status, a.body)
	}
}

// GET /auth/link without a session answers per --mode.
func TestOAuthLinkWithoutSession(t *testing.T) {
	t.Run("redirect", func(t *testing.T) {
		e := newOAuthEnv(t, oauthEnvOptions{mode: web.ModeRedirect})
		a := e.newBrowser().get("/auth/link/google?rd=/app")
		want := e.base + "/auth/login?rd=" + url.QueryEscape("/auth/link/google?rd=/app")
		if a.status != http.StatusFound || a.location() != want {
			t.Errorf("%d to %q, want 302 to %q", a.status, a.location(), want)
		}
		if _, ok := a.cookie(transactionCookie); ok {
			t.Error("a flow was started without a session")
		}
	})
	t.Run("401", func(t *testing.T) {
		e := newOAuthEnv(t, oauthEnvOptions{mode: web.Mode401})
		a := e.newBrowser().get("/auth/link/github")
		if a.status != http.StatusUnauthorized || a.problemCode() != "unauthenticated" || a.header.Get("WWW-Authenticate") == "" {
			t.Errorf("%d %v %s, want 401 unauthenticated with WWW-Authenticate", a.status, a.header, a.body)
		}
	})
}

// OA11: without --token-key-file the provider's tokens are not stored (with
// it, only sealed: TestProviderTokensSealedAtRest), not in any answer, and
// a linked identity holds only provider, subject and email. The state and the
// transaction cookie of a pending flow are stored only as hashes.
func TestOAuthProviderTokensNotKept(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	var answers []oauthAnswer
	var flowSecrets []string
	for _, provider := range bothProviders {
		e.setNext(provider, oauthtest.Account{Subject: "123", Email: provider + "@example.com", EmailVerified: true})
		b := e.newBrowser()
		answers = append(answers, b.flow("/auth/login/"+provider))
		a := b.get("/auth/me")
		answers = append(answers, a)

		pending := e.newBrowser()
		start := pending.get("/auth/login/" + provider)
		flowSecrets = append(flowSecrets, stateOf(t, start.location()), pending.heldTransactionCookie().Value)
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
	for _, s := range flowSecrets {
		if s == "" {
			t.Fatal("a pending flow's state or transaction cookie is missing")
		}
		if strings.Contains(string(db), s) {
			t.Errorf("a pending flow's state or transaction cookie is in the database in the clear")
		}
	}
	for _, s := range secrets {
		if strings.Contains(string(db), s) {
			t.Errorf("a provider code or token is in the database")
		}
		for _, a := range answers {
			if strings.Contains(a.body, s) || strings.Contains(a.location(), s) {
				t.Errorf("a provider code or token is in an answer")
			}
		}
	}
}

// OA11 behind the session gate, wired as cmd/gatehouse does: nothing of the
// OAuth flows reaches the app. The callback, the starts and the unlink are
// answered by Gatehouse and never forwarded; a signed-in request forwarded
// afterwards carries the identity headers but no provider code, token, ID
// token, state, transaction cookie or session id, in its URL or headers.
func TestOAuthNothingReachesUpstream(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{throughProxy: true})
	var secrets []string
	keep := func(b *oauthBrowser, callback string) string {
		secrets = append(secrets, stateOf(t, callback), b.heldTransactionCookie().Value)
		return callback
	}
	b := e.newBrowser()
	e.google.SetNext(oauthtest.Account{Subject: "g-1", Email: "up@example.com", EmailVerified: true})
	if a := b.get(keep(b, b.authorize("/auth/login/google?rd=/app/home"))); a.status != http.StatusSeeOther || a.location() != "/app/home" {
		t.Fatalf("login: %d to %q %s", a.status, a.location(), a.body)
	}
	e.github.SetNext(oauthtest.Account{Subject: "77", Email: "up@example.com", EmailVerified: true})
	if a := b.get(keep(b, b.authorize("/auth/link/github"))); a.status != http.StatusSeeOther {
		t.Fatalf("link: %d %s", a.status, a.body)
	}
	if a := b.do(http.MethodDelete, "/auth/link/github"); a.status != http.StatusNoContent {
		t.Fatalf("unlink: %d %s", a.status, a.body)
	}
	secrets = append(secrets, b.sessionID())
	if len(e.upstream.Requests()) != 0 {
		t.Fatalf("the OAuth flows reached the app: %v", e.upstream.Requests()[0].URL)
	}

	if a := b.get("/app/home?after=login"); a.status != http.StatusOK || a.body != "app" {
		t.Fatalf("signed-in request: %d %s", a.status, a.body)
	}
	requests := e.upstream.Requests()
	if len(requests) != 1 || requests[0].Header.Get("X-Forwarded-Email") != "up@example.com" {
		t.Fatalf("the app got %d requests, want the signed-in one with X-Forwarded-Email", len(requests))
	}
	secrets = append(secrets, e.google.Secrets()...)
	secrets = append(secrets, e.github.Secrets()...)
	for _, r := range requests {
		seen := r.URL.String() + "\n" + r.Host
		for k, v := range r.Header {
			seen += "\n" + k + ": " + strings.Join(v, ", ")
		}
		for _, s := range secrets {
			if s != "" && strings.Contains(seen, s) {
				t.Errorf("a secret of the OAuth flows (%.6s…) reached the app in %s", s, r.URL)
			}
		}
	}
}
