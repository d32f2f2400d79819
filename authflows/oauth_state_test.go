package authflows

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/authflows/provider"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// expectInvalidState checks that a callback was refused as invalid_state and
// signed nobody in.
func expectInvalidState(t *testing.T, what string, a oauthAnswer) {
	t.Helper()
	if a.status != http.StatusBadRequest || a.problemCode() != "invalid_state" {
		t.Errorf("%s: %d %s, want 400 invalid_state", what, a.status, a.body)
	}
	if _, ok := a.cookie(oauthCookieName); ok {
		t.Errorf("%s: session cookie set", what)
	}
}

// OA1: a state works once; a replayed callback is refused.
func TestOAuthStateSingleUse(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	e.github.SetNext(oauthtest.Account{Subject: "1", Email: "once@example.com", EmailVerified: true})
	b := e.newBrowser()
	callback := b.authorize("/auth/login/github")
	kept := b.heldTransactionCookie()
	if a := b.get(callback); a.status != http.StatusSeeOther {
		t.Fatalf("first callback: %d %s", a.status, a.body)
	}
	if b.heldTransactionCookie() != nil {
		t.Error("the callback left the transaction cookie in the browser")
	}
	// A replay from a browser that kept a copy of the transaction cookie
	// passes the browser check: only the spent flow refuses it.
	b.holdTransactionCookie(kept)
	expectInvalidState(t, "replay", b.get(callback))
	if n := len(e.github.TokenRequests()); n != 1 {
		t.Errorf("%d token requests, want the code redeemed once", n)
	}
	if !e.hasEvent("oauth_state_failed") {
		t.Errorf("no oauth_state_failed event in %s", e.Logs)
	}
}

// OA1: a flow expires after 10 minutes.
func TestOAuthStateExpires(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	e.google.SetNext(oauthtest.Account{Subject: "1", Email: "late@example.com", EmailVerified: true})
	b := e.newBrowser()
	callback := b.authorize("/auth/login/google")
	kept := b.heldTransactionCookie()
	e.Clock.Advance(10*time.Minute + time.Second)
	// The cookie's Max-Age has passed too; a browser with a slow clock
	// still sends it, and the store's expiry refuses the flow.
	b.holdTransactionCookie(kept)
	expectInvalidState(t, "expired", b.get(callback))
	if n := len(e.google.TokenRequests()); n != 0 {
		t.Errorf("an expired flow redeemed its code")
	}
	// Swept from the store by the background sweep.
	b.authorize("/auth/login/google")
	e.Clock.Advance(11 * time.Minute)
	if n, err := e.Store.DeleteExpiredOAuthFlows(t.Context(), e.Clock.Now()); err != nil || n != 1 {
		t.Errorf("DeleteExpiredOAuthFlows = %d, %v; want 1", n, err)
	}
}

// OA1: unknown and missing states are refused before any provider call.
func TestOAuthStateMissingOrUnknown(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	b := e.newBrowser()
	expectInvalidState(t, "no state", b.get("/auth/callback/google?code=abc"))
	expectInvalidState(t, "unknown state", b.get("/auth/callback/google?code=abc&state="+newSecret()))
	if n := len(e.google.TokenRequests()); n != 0 {
		t.Errorf("%d token requests for invalid states", n)
	}
}

// OA1: the flow is bound to the browser that started it. Another browser
// with the callback URL (a login CSRF: the attacker's code in the victim's
// oauthBrowser) is refused, and the flow is spent.
func TestOAuthStateBoundToBrowser(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	e.google.SetNext(oauthtest.Account{Subject: "attacker", Email: "mallory@example.com", EmailVerified: true})
	attacker := e.newBrowser()
	callback := attacker.authorize("/auth/login/google")
	victim := e.newBrowser()
	expectInvalidState(t, "other browser", victim.get(callback))

	// A victim in the middle of a flow of her own sends a transaction
	// cookie, just not the one the attacker's flow was bound to.
	callback = attacker.authorize("/auth/login/google")
	victim.authorize("/auth/login/google")
	expectInvalidState(t, "other browser with its own transaction cookie", victim.get(callback))

	if users, _ := e.Store.ListUsers(t.Context()); len(users) != 0 {
		t.Errorf("users created: %+v", users)
	}
	if n := len(e.google.TokenRequests()); n != 0 {
		t.Errorf("code redeemed for another browser")
	}
}

// OA4: a state minted for one provider fails on the other's callback, and
// is spent there.
func TestOAuthStateOtherProvider(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	e.google.SetNext(oauthtest.Account{Subject: "1", Email: "mix@example.com", EmailVerified: true})
	b := e.newBrowser()
	callback := b.authorize("/auth/login/google")
	kept := b.heldTransactionCookie()
	mixed := strings.Replace(callback, "/auth/callback/google", "/auth/callback/github", 1)
	// The transaction cookie is sent to every /auth/callback/ path.
	expectInvalidState(t, "google state on github", b.get(mixed))
	if n := len(e.github.TokenRequests()) + len(e.google.TokenRequests()); n != 0 {
		t.Errorf("%d token requests after a mix-up", n)
	}
	b.holdTransactionCookie(kept)
	expectInvalidState(t, "the spent state on its own provider", b.get(callback))
	if n := len(e.google.TokenRequests()); n != 0 {
		t.Errorf("the spent state redeemed its code")
	}
}

// OA7: the link-CSRF attack. The attacker starts a link with his own session
// and his provider account, stops before the callback, and gets the victim's
// browser to open the callback URL. Nothing is linked to anyone.
func TestOAuthLinkCSRF(t *testing.T) {
	for _, provider := range bothProviders {
		t.Run(provider, func(t *testing.T) {
			e := newOAuthEnv(t, oauthEnvOptions{})
			attackerUser := e.newUser("mallory@example.com", true)
			victimUser := e.newUser("victim@example.com", true)
			attacker := e.newBrowser()
			attacker.signIn(attackerUser)
			victim := e.newBrowser()
			victimSession := victim.signIn(victimUser)

			e.setNext(provider, oauthtest.Account{Subject: "666", Email: "mallory@example.com", EmailVerified: true})
			callback := attacker.authorize("/auth/link/" + provider)
			expectInvalidState(t, "victim opens the attacker's callback", victim.get(callback))
			if ids := e.identities(victimUser.ID); len(ids) != 0 {
				t.Errorf("linked to the victim: %+v", ids)
			}
			if ids := e.identities(attackerUser.ID); len(ids) != 0 {
				t.Errorf("linked to the attacker: %+v", ids)
			}
			if victim.sessionID() != victimSession {
				t.Error("victim's session changed")
			}
			if _, err := e.Store.UserByIdentity(t.Context(), provider, "666"); err == nil {
				t.Error("the identity was linked to someone")
			}
		})
	}
}

// OA7 when the browser check is gone: an attacker who can plant cookies
// for the site (a sibling subdomain, a man in the middle on plain HTTP)
// gives the victim his transaction cookie too. The link is still refused,
// because the victim's session is not the one that started it.
func TestOAuthLinkCSRFWithPlantedTransactionCookie(t *testing.T) {
	for _, provider := range bothProviders {
		t.Run(provider, func(t *testing.T) {
			e := newOAuthEnv(t, oauthEnvOptions{})
			attackerUser := e.newUser("mallory@example.com", true)
			victimUser := e.newUser("victim@example.com", true)
			attacker := e.newBrowser()
			attacker.signIn(attackerUser)
			victim := e.newBrowser()
			victimSession := victim.signIn(victimUser)

			e.setNext(provider, oauthtest.Account{Subject: "666", Email: "mallory@example.com", EmailVerified: true})
			callback := attacker.authorize("/auth/link/" + provider)
			victim.holdTransactionCookie(attacker.heldTransactionCookie())
			a := victim.get(callback)
			expectInvalidState(t, "victim with the attacker's transaction cookie", a)
			if _, err := e.Store.UserByIdentity(t.Context(), provider, "666"); err == nil {
				t.Error("the identity was linked to someone")
			}
			if n := len(e.tokenRequests(provider)); n != 0 {
				t.Errorf("%d codes redeemed", n)
			}
			if victim.sessionID() != victimSession {
				t.Error("victim's session changed")
			}
			if !strings.Contains(e.Logs.String(), "link from another session") {
				t.Errorf("refused for another reason than the session binding:\n%s", e.Logs)
			}
		})
	}
}

// The mux answers HEAD with the GET handler. A HEAD of the callback URL (a
// link checker, a prefetch) gets 405 and spends nothing: the state, the
// code and the transaction cookie all still work for the GET.
func TestOAuthCallbackHeadSpendsNothing(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	e.github.SetNext(oauthtest.Account{Subject: "4", Email: "head@example.com", EmailVerified: true})
	b := e.newBrowser()
	callback := b.authorize("/auth/login/github?rd=/after")
	head := b.do(http.MethodHead, callback)
	if head.status != http.StatusMethodNotAllowed || head.header.Get("Allow") != http.MethodGet {
		t.Errorf("HEAD: %d Allow %q, want 405 Allow GET", head.status, head.header.Get("Allow"))
	}
	if len(head.cookies) != 0 {
		t.Errorf("HEAD set cookies: %v", head.cookies)
	}
	if n := len(e.github.TokenRequests()); n != 0 {
		t.Errorf("HEAD redeemed the code (%d token requests)", n)
	}
	if a := b.get(callback); a.status != http.StatusSeeOther || a.location() != "/after" {
		t.Fatalf("GET after HEAD: %d to %q (%s), want 303 to /after", a.status, a.location(), a.body)
	}
	if _, ok := b.me(); !ok {
		t.Error("not signed in after the GET")
	}
}

// DS1: a flood of flow starts from one client IP cannot fill the store. Per
// provider, 60 starts per client IP per minute pass (the contract's floor);
// beyond, 429 rate_limited and nothing is stored. Other IPs and the other
// provider keep their own allowance, link starts count too, and the
// allowance is back a minute later. The store then holds exactly the flows
// that were answered 302, and the sweep removes them after 10 minutes.
func TestOAuthFlowStartsLimitedPerIP(t *testing.T) {
	e := newTestEnv(t, withTestProviders)
	const otherIP = "198.51.100.7"
	start := func(ip, target string, cookies ...*http.Cookie) *http.Response {
		r := e.NewRequest(http.MethodGet, target, nil)
		r.RemoteAddr = ip + ":40000"
		return e.Do(r, cookies...)
	}
	started := 0
	mustStart := func(what, ip, target string, cookies ...*http.Cookie) {
		t.Helper()
		if resp := start(ip, target, cookies...); resp.StatusCode != http.StatusFound {
			t.Fatalf("%s: status %d, want 302; body %s", what, resp.StatusCode, e.Body(t, resp))
		}
		started++
	}
	mustRefuse := func(what, ip, target string, cookies ...*http.Cookie) {
		t.Helper()
		resp := start(ip, target, cookies...)
		if code := e.ProblemCode(t, resp, http.StatusTooManyRequests); code != "rate_limited" {
			t.Errorf("%s: code %q, want rate_limited", what, code)
		}
		for _, c := range resp.Cookies() {
			if c.Name == transactionCookie {
				t.Errorf("%s: a refused start set the transaction cookie", what)
			}
		}
	}

	for i := range 60 {
		mustStart(fmt.Sprintf("start %d", i+1), testClientIP, "/auth/login/github")
	}
	mustRefuse("start 61", testClientIP, "/auth/login/github")
	session := e.StartSession(t, e.CreateUser(t, "flood@example.com", ""))
	mustRefuse("link start 61", testClientIP, "/auth/link/github", session)
	mustStart("the other provider", testClientIP, "/auth/login/google")
	mustStart("another client IP", otherIP, "/auth/login/github")

	e.Clock.Advance(time.Minute)
	for i := range 60 {
		mustStart(fmt.Sprintf("a minute later, start %d", i+1), testClientIP, "/auth/login/github")
	}
	mustRefuse("a minute later, start 61", testClientIP, "/auth/login/github")

	if n := len(e.Logs.Events("oauth_throttled")); n != 3 {
		t.Errorf("%d oauth_throttled events, want 3", n)
	}
	if got := e.CounterValue(t, "gatehouse_oauth_events_total", map[string]string{"provider": "github", "result": "throttled"}); got != 3 {
		t.Errorf("gatehouse_oauth_events_total{github,throttled} = %v, want 3", got)
	}
	e.Clock.Advance(oauthFlowTTL)
	n, err := e.Store.DeleteExpiredOAuthFlows(t.Context(), e.Clock.Now())
	if err != nil || n != started {
		t.Errorf("swept %d flows (%v), want the %d that were started: refused starts store nothing", n, err, started)
	}
}

// withTestProviders configures both providers on a testEnv, with endpoints
// nobody answers: enough to start flows, not to finish them.
func withTestProviders(c *Config) {
	for _, name := range []string{"google", "github"} {
		c.Providers = append(c.Providers, provider.Config{
			Name: name, ClientID: name + "-id", ClientSecret: name + "-secret",
			RedirectURL: c.BaseURL.String() + "/auth/callback/" + name,
			AuthURL:     "https://" + name + ".invalid/authorize", TokenURL: "https://" + name + ".invalid/token",
		})
	}
}

// OA7, same browser: a link completes only for the session that started
// it. Signing in as someone else (or out) before the callback spoils it.
func TestOAuthLinkBoundToSession(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	first := e.newUser("first@example.com", true)
	second := e.newUser("second@example.com", true)
	b := e.newBrowser()
	b.signIn(first)
	e.github.SetNext(oauthtest.Account{Subject: "9", Email: "x@example.com", EmailVerified: true})

	callback := b.authorize("/auth/link/github")
	b.signIn(second)
	expectInvalidState(t, "other session", b.get(callback))

	callback = b.authorize("/auth/link/github")
	if err := e.Store.DeleteSession(t.Context(), storage.HashSecret(b.sessionID())); err != nil {
		t.Fatal(err)
	}
	expectInvalidState(t, "signed out", b.get(callback))

	if len(e.identities(first.ID))+len(e.identities(second.ID)) != 0 {
		t.Error("something was linked")
	}
	if n := len(e.github.TokenRequests()); n != 0 {
		t.Errorf("%d codes redeemed for spoiled links", n)
	}
}
