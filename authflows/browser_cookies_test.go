package authflows

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// The browser-facing surface as an attacker on a sibling site or in
// another tab sees it: cookies, buckets, races between sessions.

// plainClient follows no redirect and keeps no cookies: each step of a flow
// is inspected, and the cookies sent are exactly the ones the test adds.
func plainClient() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// OA1 + CK1: with Secure cookies the session cookie is __Host- so that a
// sibling subdomain (or a plain-http answer of the same host) cannot plant it
// (cookie tossing). The OAuth transaction cookie is what binds a flow to the
// browser (OA1), yet it is a plain "gatehouse_oauth" with Path=/auth/callback/:
// evil.example.com can set "gatehouse_oauth=<the attacker's value>;
// Domain=example.com; Path=/auth/callback/" in the victim's browser. The
// attacker starts a sign-in with their own provider account, stops before the
// callback, plants their transaction cookie in the victim's browser and sends
// the victim to the callback URL: the victim is signed in to the attacker's
// account (login CSRF, session fixation by another road). The cookie must be
// one a sibling cannot plant (__Host-, hence Path=/), and the callback must not
// accept the value under the plantable name.
func TestOAuthTransactionCookieCannotBePlantedBySibling(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	e.Handler.cfg.CookieSecure = true // https deployment: __Host- session cookie (CK1)
	e.setNext("github", oauthtest.Account{Subject: "666", Email: "attacker@evil.example", EmailVerified: true})
	client := plainClient()
	get := func(target string, cookies ...*http.Cookie) *http.Response {
		t.Helper()
		if strings.HasPrefix(target, "/") {
			target = e.base + target
		}
		req, err := http.NewRequest(http.MethodGet, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cookies {
			req.AddCookie(c)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}

	// The attacker, in their own browser.
	start := get("/auth/login/github?rd=/app")
	if start.StatusCode != http.StatusFound {
		t.Fatalf("start: %d", start.StatusCode)
	}
	var tx *http.Cookie
	for _, c := range start.Cookies() {
		if strings.Contains(c.Name, "gatehouse_oauth") {
			tx = c
		}
	}
	if tx == nil {
		t.Fatalf("no transaction cookie in %q", start.Header.Values("Set-Cookie"))
	}
	if !strings.HasPrefix(tx.Name, "__Host-") || !tx.Secure || tx.Path != "/" || tx.Domain != "" {
		t.Errorf("transaction cookie %q (Secure=%v, Path=%q, Domain=%q): with Secure cookies it must be a __Host- cookie, "+
			"or a sibling subdomain can plant it (OA1, CK1)", tx.Name, tx.Secure, tx.Path, tx.Domain)
	}
	authorize := get(start.Header.Get("Location"))
	callback := authorize.Header.Get("Location")
	if authorize.StatusCode != http.StatusFound || callback == "" {
		t.Fatalf("provider authorize: %d", authorize.StatusCode)
	}

	// The victim's browser, holding only what evil.example.com planted
	// under the unprefixed name (a sibling can set any other name than
	// a __Host- one), opens the callback.
	planted := &http.Cookie{Name: transactionCookie, Value: tx.Value}
	victim := get(callback, planted)
	for _, c := range victim.Cookies() {
		if c.Name == oauthCookieName && c.Value != "" {
			t.Fatalf("the victim's browser was signed in to the attacker's account through a planted %q cookie: %d to %q",
				transactionCookie, victim.StatusCode, victim.Header.Get("Location"))
		}
	}
	if victim.StatusCode != http.StatusBadRequest {
		t.Errorf("callback with a planted transaction cookie: %d, want 400 invalid_state", victim.StatusCode)
	}
}

// DV1: "a stolen cookie still allows only a bucket's worth of guesses"
// (devicecookie.go). The nonce bucket is keyed by the nonce as spelled in the
// cookie, but the base64 decoder ignores the 4 spare bits of the nonce's last
// character: 16 spellings decode to the same nonce and pass the HMAC. A thief
// of one device cookie gets 16 buckets, 160 guesses per 15 minutes instead of
// 10, while the account is locked for everyone else.
func TestDeviceCookieNonceRespellingGetsNoFreshBucket(t *testing.T) {
	env := newTestEnv(t)
	env.CreateUser(t, aliceEmail, alicePassword)
	device := deviceCookieOf(loginWith(env, aliceEmail, alicePassword))
	if device == nil {
		t.Fatal("no device cookie")
	}
	lockOut(t, env, aliceEmail)
	for i := range 10 {
		if resp := loginWith(env, aliceEmail, "guess", device); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("guess %d with the cookie: status %d", i+1, resp.StatusCode)
		}
	}
	if resp := loginWith(env, aliceEmail, "guess", device); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("11th guess with the cookie: status %d, want 429", resp.StatusCode)
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	nonce, mac, _ := strings.Cut(device.Value, ".")
	last := strings.IndexByte(alphabet, nonce[len(nonce)-1])
	extra := 0
	for k := range 16 {
		idx := last&^0xF | k
		if idx == last {
			continue
		}
		respelled := &http.Cookie{Name: deviceCookieName, Value: nonce[:len(nonce)-1] + string(alphabet[idx]) + "." + mac}
		before := env.HashRuns()
		resp := loginWith(env, aliceEmail, "guess", respelled)
		if resp.StatusCode != http.StatusTooManyRequests || env.HashRuns() != before {
			extra++
		}
	}
	if extra > 0 {
		t.Errorf("%d respellings of one device cookie's nonce each got a fresh failure bucket (guesses hashed on a locked account)", extra)
	}
}

// CR1 ("a revocation bump[s] the user's credential epoch, and a session ...
// is created only in a store transaction that finds the epoch it was checked
// against"; storage: "a sign-in in flight cannot add one afterwards"). The
// account page's "sign out everywhere else" is a revocation (audit event
// sessions_revoked), but it deletes the sessions one by one without bumping
// the epoch: a sign-in whose password was checked before the click writes
// its session after it, and that session stays signed in "elsewhere".
// `gatehouse users revoke-sessions` (DeleteUserSessions) does not let it.
func TestSignOutEverywhereElseBeatsSignInInFlight(t *testing.T) {
	held := &heldLookups{release: make(chan struct{})}
	e := newTestEnv(t, func(c *Config) { held.Store = c.Store.(storage.Store); c.Store = held })
	u := e.CreateUser(t, "ann@example.com", testPassword)
	mine := e.StartSession(t, u)

	held.read.Add(1)
	var inFlight *http.Response
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := e.JSONRequest(http.MethodPost, "/auth/login", map[string]string{"email": "ann@example.com", "password": testPassword})
		r.RemoteAddr = "203.0.113.66:4000" // somebody else, elsewhere
		inFlight = e.Do(r)
	}()
	held.read.Wait() // the password is being checked elsewhere

	resp := e.PostJSON("/auth/account/sessions/revoke-others", "", mine)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke-others: %d %s", resp.StatusCode, e.Body(t, resp))
	}
	close(held.release)
	<-done

	if c := e.SessionCookie(inFlight); c != nil && c.Value != "" {
		if me := e.Get("/auth/me", c); me.StatusCode == http.StatusOK {
			t.Errorf("a sign-in checked before \"sign out everywhere else\" left a working session elsewhere (login %d)", inFlight.StatusCode)
		}
	}
	if me := e.Get("/auth/me", mine); me.StatusCode != http.StatusOK {
		t.Errorf("the browser that signed out the others lost its own session: /auth/me %d", me.StatusCode)
	}
}

// README ("the current password is checked against the per-account
// failed-login budget") and changePassword's own doc ("a stolen session must
// not become a password oracle"): the password change takes its token from
// loginFailures under the raw email, while a sign-in takes it under
// loginAccountKey (the email's hash). They are two budgets: an account that
// guesses from elsewhere have locked still lets the holder of a stolen session
// check guesses of the current password, and guesses made there never count
// against sign-ins.
func TestPasswordChangeSharesTheFailedLoginBudget(t *testing.T) {
	e := newTestEnv(t)
	u := e.CreateUser(t, "ann@example.com", testPassword)
	stolen := e.StartSession(t, u)
	lockOut(t, e, "ann@example.com") // 10 failed sign-ins: the account's budget is spent
	if resp := loginWith(e, "ann@example.com", testPassword); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("sign-in on the locked account: %d, want 429", resp.StatusCode)
	}
	before := e.HashRuns()
	r := e.JSONRequest(http.MethodPost, "/auth/account/password",
		map[string]string{"current_password": "another guess at it", "password": "a brand new passphrase 2026"})
	r.RemoteAddr = "203.0.113.99:4000"
	resp := e.Do(r, stolen)
	if resp.StatusCode != http.StatusTooManyRequests || e.HashRuns() != before {
		t.Errorf("password change on an account whose failed-login budget is spent: %d (%d hashes), want 429 before any hashing; body %s",
			resp.StatusCode, e.HashRuns()-before, e.Body(t, resp))
	}
}
