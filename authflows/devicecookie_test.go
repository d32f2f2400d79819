package authflows

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// deviceCookieOf returns the device cookie set by resp, or nil.
func deviceCookieOf(resp *http.Response) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == deviceCookieName {
			return c
		}
	}
	return nil
}

// lockOut makes 10 failed guesses on email from addresses all over, which
// locks the account's bucket.
func lockOut(t *testing.T, env *testEnv, email string) {
	t.Helper()
	for i := range 10 {
		r := env.JSONRequest(http.MethodPost, "/auth/login", map[string]string{"email": email, "password": "a wrong guess"})
		r.RemoteAddr = fmt.Sprintf("198.51.100.%d:5000", i+1)
		if resp := env.Do(r); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("guess %d: status %d", i+1, resp.StatusCode)
		}
	}
}

func loginWith(env *testEnv, email, password string, cookies ...*http.Cookie) *http.Response {
	return env.Do(env.JSONRequest(http.MethodPost, "/auth/login", map[string]string{"email": email, "password": password}), cookies...)
}

// DV1: guesses from elsewhere lock the account for every browser but the
// ones that signed in to it before: those keep signing in.
func TestDeviceCookieLiftsAccountLock(t *testing.T) {
	env := newTestEnv(t)
	env.CreateUser(t, aliceEmail, alicePassword)
	first := loginWith(env, aliceEmail, alicePassword)
	device := deviceCookieOf(first)
	if first.StatusCode != http.StatusOK || device == nil {
		t.Fatalf("first sign-in: %d, device cookie %v", first.StatusCode, device)
	}
	if !device.HttpOnly || device.Path != "/auth/" || device.MaxAge <= 0 || device.Secure != env.Config.CookieSecure ||
		strings.Contains(device.Value, "alice") {
		t.Errorf("device cookie %+v: want HttpOnly, Path=/auth/, a lifetime, Secure per flag, no email in it", device)
	}

	lockOut(t, env, aliceEmail)
	// A new browser is locked out, with the right password too.
	if code := env.ProblemCode(t, loginWith(env, aliceEmail, alicePassword), http.StatusTooManyRequests); code != "rate_limited" {
		t.Fatalf("new browser on a locked account: %q", code)
	}
	// The owner's browser signs in, with the other spelling of the address too.
	if resp := loginWith(env, strings.ToUpper(aliceEmail), alicePassword, device); resp.StatusCode != http.StatusOK {
		t.Fatalf("owner's browser on a locked account: status %d %s", resp.StatusCode, env.Body(t, resp))
	}
	// It can still mistype and retry.
	if resp := loginWith(env, aliceEmail, "a typo", device); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("owner's typo: status %d", resp.StatusCode)
	}
	if resp := loginWith(env, aliceEmail, alicePassword, device); resp.StatusCode != http.StatusOK {
		t.Fatalf("owner after a typo: status %d", resp.StatusCode)
	}
	// The lock still holds for everyone else.
	if resp := loginWith(env, aliceEmail, alicePassword); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("new browser after the owner's sign-in: status %d", resp.StatusCode)
	}
}

// DV1: only a cookie signed for this account lifts its lock: one for
// another account, a tampered one or a made-up one does not.
func TestDeviceCookieBoundToAccountAndKey(t *testing.T) {
	env := newTestEnv(t)
	env.CreateUser(t, aliceEmail, alicePassword)
	env.CreateUser(t, "bob@example.com", "bob's own passphrase")
	bobs := deviceCookieOf(loginWith(env, "bob@example.com", "bob's own passphrase"))
	alices := deviceCookieOf(loginWith(env, aliceEmail, alicePassword))
	if bobs == nil || alices == nil {
		t.Fatal("no device cookies")
	}
	nonce, mac, _ := strings.Cut(alices.Value, ".")
	tampered := []string{
		bobs.Value,
		flipFirst(nonce) + "." + mac,
		nonce + "." + flipFirst(mac),
		nonce + "." + strings.Repeat("A", len(mac)),
		nonce,
		"",
		"AAAAAAAAAAAAAAAAAAAAAA." + mac,
	}
	lockOut(t, env, aliceEmail)
	for _, v := range tampered {
		c := &http.Cookie{Name: deviceCookieName, Value: v}
		if resp := loginWith(env, aliceEmail, alicePassword, c); resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("device cookie %q lifted alice's lock: status %d", v, resp.StatusCode)
		}
	}
	if resp := loginWith(env, aliceEmail, alicePassword, alices); resp.StatusCode != http.StatusOK {
		t.Errorf("alice's own cookie: status %d", resp.StatusCode)
	}
}

// DV1: a device cookie has a failure bucket of its own, so a stolen one
// allows no more guesses than the account's bucket would.
func TestDeviceCookieHasItsOwnBucket(t *testing.T) {
	env := newTestEnv(t)
	env.CreateUser(t, aliceEmail, alicePassword)
	device := deviceCookieOf(loginWith(env, aliceEmail, alicePassword))
	for i := range 10 {
		if resp := loginWith(env, aliceEmail, "guess", device); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("guess %d with the cookie: status %d", i+1, resp.StatusCode)
		}
	}
	before := env.HashRuns()
	if resp := loginWith(env, aliceEmail, alicePassword, device); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("11th attempt with the cookie: status %d", resp.StatusCode)
	}
	if env.HashRuns() != before {
		t.Error("a throttled attempt was hashed")
	}
	// Those guesses did not touch the account's bucket.
	if resp := loginWith(env, aliceEmail, alicePassword); resp.StatusCode != http.StatusOK {
		t.Errorf("another browser: status %d", resp.StatusCode)
	}
	env.Clock.Advance(15 * time.Minute)
	if resp := loginWith(env, aliceEmail, alicePassword, device); resp.StatusCode != http.StatusOK {
		t.Errorf("15 minutes later with the cookie: status %d", resp.StatusCode)
	}
}

// DV1: the key is kept in the store: a restarted handler on the same store
// accepts the cookies the old one set.
func TestDeviceCookieKeySurvivesRestart(t *testing.T) {
	env := newTestEnv(t)
	env.CreateUser(t, aliceEmail, alicePassword)
	device := deviceCookieOf(loginWith(env, aliceEmail, alicePassword))
	restarted, err := New(func() Config { c := env.Config; c.Registerer = nil; return c }())
	if err != nil {
		t.Fatal(err)
	}
	env.Handler = restarted
	lockOut(t, env, aliceEmail)
	if resp := loginWith(env, aliceEmail, alicePassword, device); resp.StatusCode != http.StatusOK {
		t.Errorf("cookie from before the restart: status %d", resp.StatusCode)
	}
}

// flipFirst changes the first character of s to another base64url one.
func flipFirst(s string) string {
	b := []byte(s)
	if b[0] == 'A' {
		b[0] = 'B'
	} else {
		b[0] = 'A'
	}
	return string(b)
}
