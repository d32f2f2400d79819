package authflows

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
)

const freshPassword = "a fresh passphrase 42"

// RT4, RT5: opening the link renders a form with the token in a hidden
// field, consumes nothing, and tells the browser not to leak or keep it.
func TestResetPageDoesNotConsumeToken(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{})
	e.CreateUser(t, "alice@example.com", oldPassword)
	token := e.resetToken(t, "alice@example.com")

	for range 3 { // a mail scanner, the user, the user again
		resp := e.Get("/auth/reset?token=" + token)
		body := e.Body(t, resp)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		for _, want := range []string{`<input type="hidden" name="token" value="` + token + `">`, `name="password"`, `name="confirm"`, `action="/auth/reset"`} {
			if !strings.Contains(body, want) {
				t.Fatalf("page lacks %s:\n%s", want, body)
			}
		}
		if got := resp.Header.Get("Referrer-Policy"); got != "no-referrer" {
			t.Errorf("Referrer-Policy %q", got)
		}
		if got := resp.Header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("Cache-Control %q", got)
		}
		if got := resp.Header.Get("Content-Security-Policy"); !strings.Contains(got, "default-src 'none'") {
			t.Errorf("Content-Security-Policy %q", got)
		}
	}
	if resp := e.postReset(token, freshPassword); resp.StatusCode != http.StatusOK {
		t.Fatalf("reset after three GETs: %d %s", resp.StatusCode, e.Body(t, resp))
	}

	// A used or made-up token answers 410 "link expired", not a form.
	for _, target := range []string{"/auth/reset?token=" + token, "/auth/reset?token=bogus", "/auth/reset"} {
		resp := e.Get(target)
		body := e.Body(t, resp)
		if resp.StatusCode != http.StatusGone || !strings.Contains(body, "This reset link has expired") || !strings.Contains(body, `href="/auth/forgot"`) || strings.Contains(body, `name="password"`) {
			t.Errorf("%s: %d %s", target, resp.StatusCode, body)
		}
		if resp.Header.Get("Referrer-Policy") != "no-referrer" || resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: headers %v", target, resp.Header)
		}
	}
}

// RS1, RT2: unknown, used, expired and superseded tokens get one answer.
func TestResetInvalidTokensLookAlike(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{})
	e.CreateUser(t, "alice@example.com", oldPassword)
	e.CreateUser(t, "bob@example.com", oldPassword)

	used := e.resetToken(t, "alice@example.com")
	if resp := e.postReset(used, freshPassword); resp.StatusCode != http.StatusOK {
		t.Fatalf("first use: %d", resp.StatusCode)
	}
	e.nextMail(t) // the notice
	superseded := e.resetToken(t, "alice@example.com")
	newest := e.resetToken(t, "alice@example.com")
	e.ProblemCode(t, e.postReset(superseded, freshPassword), http.StatusBadRequest)
	if resp := e.postReset(newest, freshPassword); resp.StatusCode != http.StatusOK {
		t.Fatalf("newest of two: %d", resp.StatusCode)
	}
	e.nextMail(t) // the notice
	expired := e.resetToken(t, "bob@example.com")
	e.Clock.Advance(30 * time.Minute) // the lifetime, to the nanosecond
	fresh := e.resetToken(t, "bob@example.com")
	e.Clock.Advance(30*time.Minute - time.Second)

	tokens := map[string]string{
		"unknown": newSecret(), "used": used, "superseded": superseded, "expired": expired, "empty": "",
	}
	var first string
	for name, token := range tokens {
		resp := e.postReset(token, freshPassword)
		body := e.Body(t, resp)
		if code := e.ProblemCode(t, resp, http.StatusBadRequest); code != "invalid_token" {
			t.Errorf("%s: code %q", name, code)
		}
		if first == "" {
			first = body
		} else if body != first {
			t.Errorf("%s: body %s differs from %s", name, body, first)
		}
	}
	if n := len(e.Logs.Events("reset_failed")); n != len(tokens)+1 { // +1: superseded, above
		t.Errorf("%d reset_failed events, want %d", n, len(tokens)+1)
	}
	// One second before its expiry a token still works.
	if resp := e.postReset(fresh, freshPassword); resp.StatusCode != http.StatusOK {
		t.Errorf("one second before expiry: %d %s", resp.StatusCode, e.Body(t, resp))
	}
}

// RS2: an invalid token is refused before any hashing work.
func TestResetChecksTokenBeforeHashing(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{options: []func(*Config){hashLimits(password.Limits{Wait: -1})}})
	e.CreateUser(t, "alice@example.com", oldPassword)
	before := e.HashRuns()
	for range 5 {
		e.ProblemCode(t, e.postReset(newSecret(), freshPassword), http.StatusBadRequest)
	}
	if got := e.HashRuns(); got != before {
		t.Fatalf("%d hashes for invalid tokens, want none", got-before)
	}
	// With every hashing slot taken (and no wait allowed), anything that
	// asked for a slot would be answered 503 busy: a bad token is answered
	// invalid_token, a good one busy, so the token comes first.
	token := e.resetToken(t, "alice@example.com")
	release := e.FillHashSlots(t)
	if code := e.ProblemCode(t, e.postReset(newSecret(), freshPassword), http.StatusBadRequest); code != "invalid_token" {
		t.Fatalf("bad token with a full hasher: code %q, want invalid_token", code)
	}
	if code := e.ProblemCode(t, e.postReset(token, freshPassword), http.StatusServiceUnavailable); code != "busy" {
		t.Fatalf("good token with a full hasher: code %q, want busy", code)
	}
	release()

	before = e.HashRuns()
	if resp := e.postReset(token, freshPassword); resp.StatusCode != http.StatusOK {
		t.Fatalf("reset: %d", resp.StatusCode)
	}
	if got := e.HashRuns() - before; got != 1 {
		t.Fatalf("%d hashes for a reset, want 1", got)
	}
}

// RS3, RS4: the reset replaces the hash and deletes every session of the
// user, the caller's included; no new session is started, the caller's
// cookie is expired, and the old password stops working.
func TestResetRevokesEverySession(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{})
	alice := e.CreateUser(t, "alice@example.com", oldPassword)
	e.CreateUser(t, "bob@example.com", oldPassword)
	var cookies []*http.Cookie
	for range 3 {
		cookies = append(cookies, e.Login(t, "alice@example.com", oldPassword))
	}
	bob := e.Login(t, "bob@example.com", oldPassword)
	token := e.resetToken(t, "alice@example.com")

	resp := e.postReset(token, freshPassword, cookies[0])
	if body := e.Body(t, resp); resp.StatusCode != http.StatusOK || body != `{"status":"password_reset"}`+"\n" {
		t.Fatalf("reset: %d %s", resp.StatusCode, body)
	}
	if c := e.SessionCookie(resp); c == nil || c.Value != "" || c.MaxAge >= 0 {
		t.Fatalf("session cookie in the answer: %+v, want only an expired one", c)
	}
	for i, c := range cookies {
		if _, err := e.Store.Session(t.Context(), storage.HashSecret(c.Value)); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("session %d survived the reset: %v", i, err)
		}
		if me := e.Get("/auth/me", c); me.StatusCode != http.StatusUnauthorized {
			t.Errorf("session %d: /auth/me %d", i, me.StatusCode)
		}
	}
	if _, err := e.Store.Session(t.Context(), storage.HashSecret(bob.Value)); err != nil {
		t.Errorf("another user's session was deleted: %v", err)
	}
	if got := e.Logs.Events("reset_completed"); len(got) != 1 || !strings.Contains(got[0], "sessions_revoked=3") || !strings.Contains(got[0], "user_id="+alice.ID) {
		t.Errorf("reset_completed events %q", got)
	}
	if v := e.CounterValue(t, "gatehouse_sessions_revoked_total", nil); v != 3 {
		t.Errorf("revocations counter %v, want 3", v)
	}
	if v := e.CounterValue(t, "gatehouse_password_resets_total", map[string]string{"result": "ok"}); v != 1 {
		t.Errorf("resets counter %v, want 1", v)
	}
	if r := e.PostJSON("/auth/login", map[string]string{"email": "alice@example.com", "password": oldPassword}); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("old password: login %d", r.StatusCode)
	}
	e.Login(t, "alice@example.com", freshPassword)
}

// RS3: of 20 concurrent resets with one token exactly one succeeds, and its
// password is the one stored.
func TestResetConcurrentOneToken(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{})
	e.CreateUser(t, "alice@example.com", oldPassword)
	token := e.resetToken(t, "alice@example.com")

	const n = 20
	statuses := make([]int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			resp := e.postReset(token, fmt.Sprintf("concurrent password %02d", i))
			statuses[i] = resp.StatusCode
			if resp.StatusCode != http.StatusOK {
				if code := e.ProblemCode(t, resp, http.StatusBadRequest); code != "invalid_token" {
					t.Errorf("request %d: code %q", i, code)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, s := range statuses {
		if s == http.StatusOK {
			if winner >= 0 {
				t.Fatalf("requests %d and %d both succeeded", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("no request succeeded: %v", statuses)
	}
	e.Login(t, "alice@example.com", fmt.Sprintf("concurrent password %02d", winner))
}

// RS5, PW2, PW3: a refused password says why and leaves the token usable.
func TestResetWeakPasswordKeepsToken(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{})
	e.CreateUser(t, "alice@example.com", oldPassword)
	token := e.resetToken(t, "alice@example.com")
	weak := map[string]string{
		"11 characters":                 "abcdefghijk",
		"11 code points after NFKC":     strings.Repeat("e\u0301", 11), // 22 before: é decomposed
		"1025 characters":               strings.Repeat("a", 1025),
		"common":                        "passwordpassword",
		"the email":                     "alice@example.com",
		"the email, another case":       " ALICE@Example.com",
		"11 characters, emoji included": "🔑🔑🔑🔑🔑🔑🔑🔑🔑🔑🔑",
	}
	before := e.HashRuns()
	for name, pw := range weak {
		resp := e.postReset(token, pw)
		var p struct{ Code, Detail string }
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: status %d", name, resp.StatusCode)
		}
		e.DecodeJSON(t, resp, &p)
		if p.Code != "weak_password" || p.Detail == "" {
			t.Errorf("%s: %+v, want weak_password with a reason", name, p)
		}
	}
	if e.HashRuns() != before {
		t.Error("a refused password was hashed")
	}
	if v := e.CounterValue(t, "gatehouse_password_resets_total", map[string]string{"result": "weak_password"}); v != float64(len(weak)) {
		t.Errorf("weak_password counter %v", v)
	}
	if resp := e.postReset(token, freshPassword); resp.StatusCode != http.StatusOK {
		t.Fatalf("token unusable after refusals: %d %s", resp.StatusCode, e.Body(t, resp))
	}
}

// PW2: the limits are code points after NFKC, 12 to 1024, and a long
// password is used whole, never truncated.
func TestResetPasswordLengthInCodePoints(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{})
	alice := e.CreateUser(t, "alice@example.com", oldPassword)
	accepted := []struct{ name, pw string }{
		{"12 with precomposed é", "tqmzvwxplr" + strings.Repeat("é", 2)},
		{"12 with decomposed é", "tqmzvwxplr" + strings.Repeat("e\u0301", 2)},
		{"1024 characters", "tqmzvwxplrkd" + strings.Repeat("z", 1011) + "!"},
		{"fullwidth, NFKC form", "ｆｕｌｌｗｉｄｔｈ ｐａｓｓ"},
	}
	for _, c := range accepted {
		name, pw := c.name, c.pw
		e.Clock.Advance(10 * time.Minute)
		token := e.resetToken(t, "alice@example.com")
		if resp := e.postReset(token, pw); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", name, resp.StatusCode, e.Body(t, resp))
		}
		e.nextMail(t) // the notice
		u, _ := e.Store.UserByID(t.Context(), alice.ID)
		ok, _, err := e.Hasher.Verify(t.Context(), u.PasswordHash, password.Normalize(pw))
		if err != nil || !ok {
			t.Fatalf("%s: stored hash does not verify the password (%v)", name, err)
		}
		if name == "1024 characters" {
			if ok, _, _ := e.Hasher.Verify(t.Context(), u.PasswordHash, "tqmzvwxplrkd"+strings.Repeat("z", 1011)+"?"); ok {
				t.Fatal("the last character of a 1024-character password is ignored")
			}
		}
	}
	e.Login(t, "alice@example.com", "fullwidth pass") // NFKC of the last one
}

// RS6: the user is mailed a notice without secrets.
func TestResetMailsNotice(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{})
	e.CreateUser(t, "alice@example.com", oldPassword)
	token := e.resetToken(t, "alice@example.com")
	if resp := e.postReset(token, freshPassword); resp.StatusCode != http.StatusOK {
		t.Fatalf("reset: %d", resp.StatusCode)
	}
	m := e.nextMail(t)
	if m.To != "alice@example.com" || !strings.Contains(m.Subject, "changed") {
		t.Fatalf("notice to %s: %q", m.To, m.Subject)
	}
	if !strings.Contains(m.Text, "was changed") || !strings.Contains(m.Text, testBaseURL+"/auth/forgot") {
		t.Errorf("notice text:\n%s", m.Text)
	}
	// A reset signs every browser out, this one included: the notice says so.
	if !strings.Contains(m.Text, "Every device that was signed in has been signed out.") {
		t.Errorf("notice text does not say every device was signed out:\n%s", m.Text)
	}
	for _, secret := range []string{token, freshPassword, oldPassword, "token="} {
		if strings.Contains(m.Raw, secret) {
			t.Errorf("the notice contains %q", secret)
		}
	}
}

// The browser flow: the form posts token, password and confirm; success
// lands on the sign-in page; errors show the page again.
func TestResetForm(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{})
	e.CreateUser(t, "alice@example.com", oldPassword)
	token := e.resetToken(t, "alice@example.com")

	resp := e.PostForm("/auth/reset", url.Values{"token": {token}, "password": {freshPassword}, "confirm": {freshPassword + "x"}})
	if body := e.Body(t, resp); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "differ") || !strings.Contains(body, `value="`+token+`"`) {
		t.Fatalf("mismatch: %d %s", resp.StatusCode, body)
	}
	resp = e.PostForm("/auth/reset", url.Values{"token": {token}, "password": {"short"}, "confirm": {"short"}})
	if body := e.Body(t, resp); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "at least 12") || !strings.Contains(body, `value="`+token+`"`) {
		t.Fatalf("weak: %d %s", resp.StatusCode, body)
	}
	resp = e.PostForm("/auth/reset", url.Values{"token": {token}, "password": {freshPassword}, "confirm": {freshPassword}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/auth/login?reset=1" {
		t.Fatalf("success: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if c := e.SessionCookie(resp); c != nil && c.MaxAge >= 0 {
		t.Fatalf("a session cookie was set: %+v", c)
	}
	resp = e.PostForm("/auth/reset", url.Values{"token": {token}, "password": {freshPassword}, "confirm": {freshPassword}})
	if body := e.Body(t, resp); resp.StatusCode != http.StatusGone || !strings.Contains(body, "This reset link has expired") {
		t.Fatalf("reused token: %d %s", resp.StatusCode, body)
	}
	e.Login(t, "alice@example.com", freshPassword)
}

// Resets are rate limited per client IP: 60 a minute pass.
func TestResetRateLimited(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{})
	post := func(ip string) *http.Response {
		r := e.JSONRequest(http.MethodPost, "/auth/reset", map[string]string{"token": "bogus", "password": freshPassword})
		r.RemoteAddr = ip + ":4444"
		return e.Do(r)
	}
	for i := range 60 {
		if resp := post("203.0.113.9"); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("attempt %d: %d", i, resp.StatusCode)
		}
	}
	if code := e.ProblemCode(t, post("203.0.113.9"), http.StatusTooManyRequests); code != "rate_limited" {
		t.Fatalf("code %q", code)
	}
	if resp := post("203.0.113.10"); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("another IP: %d", resp.StatusCode)
	}
	e.Clock.Advance(time.Minute)
	if resp := post("203.0.113.9"); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("after a minute: %d", resp.StatusCode)
	}
}

// A busy hasher answers 503 busy and keeps the token.
func TestResetBusy(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{options: []func(*Config){hashLimits(password.Limits{Wait: 50 * time.Millisecond})}})
	e.CreateUser(t, "alice@example.com", oldPassword)
	token := e.resetToken(t, "alice@example.com")
	release := e.FillHashSlots(t)
	if code := e.ProblemCode(t, e.postReset(token, freshPassword), http.StatusServiceUnavailable); code != "busy" {
		t.Fatalf("code %q", code)
	}
	release()
	if resp := e.postReset(token, freshPassword); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the hasher freed up: %d", resp.StatusCode)
	}
}

// A token survives a restart: new store handle on the same file, new Handler.
func TestResetTokenSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	store, err := bolt.Open(path, bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	first := newMailEnv(t, mailEnvConfig{store: store})
	first.CreateUser(t, "alice@example.com", oldPassword)
	token := first.resetToken(t, "alice@example.com")
	// Wait until the delivered mail has left the queue: a job still queued
	// at the restart would be sent again with a fresh token voiding this one.
	first.noMail(t)
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	reopened, err := bolt.Open(path, bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reopened.Close() })
	second := newMailEnv(t, mailEnvConfig{store: reopened})
	if resp := second.postReset(token, freshPassword); resp.StatusCode != http.StatusOK {
		t.Fatalf("reset after restart: %d %s", resp.StatusCode, second.Body(t, resp))
	}
	second.Login(t, "alice@example.com", freshPassword)
}

// SMTP down during forgot: the mail waits in the store and is delivered
// once the relay comes up; its link works.
func TestForgotMailWaitsForRelay(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{relayDown: true})
	e.CreateUser(t, "alice@example.com", oldPassword)
	e.forgot(t, "alice@example.com")
	waitUntil(t, "a failed delivery attempt", func() bool {
		due, err := e.Config.Store.(storage.Store).DueMail(t.Context(), time.Now().Add(time.Hour), 10)
		return err == nil && len(due) == 1 && due[0].Attempts >= 1
	})
	if !strings.Contains(e.Logs.String(), "mail delivery failed") {
		t.Fatal("the failed attempt was not logged")
	}
	e.startRelay(t)
	_, token := resetLink(t, e.nextMail(t))
	if resp := e.postReset(token, freshPassword); resp.StatusCode != http.StatusOK {
		t.Fatalf("reset: %d", resp.StatusCode)
	}
}

// Mail queued while no queue runs is not lost: a queue started later (after
// a restart) sends it.
func TestForgotMailQueuedWhileQueueStopped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	store, err := bolt.Open(path, bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	e := newTestEnv(t, func(c *Config) { c.Store = store })
	if err := store.CreateUser(t.Context(), storage.User{ID: randomUserID(), Email: "alice@example.com"}); err != nil {
		t.Fatal(err)
	}
	resp := e.PostJSON("/auth/forgot", map[string]string{"email": "alice@example.com"})
	if resp.StatusCode != http.StatusAccepted {
		t.Fatal(resp.StatusCode)
	}
	later := newMailEnv(t, mailEnvConfig{store: store}) // a queue starts now
	_, token := resetLink(t, later.nextMail(t))
	if resp := later.postReset(token, freshPassword); resp.StatusCode != http.StatusOK {
		t.Fatalf("reset: %d", resp.StatusCode)
	}
}

func hashHex(secret string) string {
	h := storage.HashSecret(secret)
	return hex.EncodeToString(h[:])
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// LG1: the token, the passwords, the SMTP password and the mail bodies never
// appear in any log line, through every step of forgot and reset.
func TestResetLogsNoSecrets(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{relayDown: true})
	e.CreateUser(t, "alice@example.com", oldPassword)
	e.CreateUser(t, "oauth-only@example.com", "")
	e.forgot(t, "alice@example.com")
	e.forgot(t, "oauth-only@example.com")
	e.forgot(t, "nobody@example.com")
	waitUntil(t, "failed deliveries", func() bool { return strings.Contains(e.Logs.String(), "mail delivery failed") })
	e.startRelay(t)
	var mails []mailed
	var tokens []string
	var token string // alice's
	for range 2 {
		m := e.nextMail(t)
		mails = append(mails, m)
		_, tk := resetLink(t, m)
		tokens = append(tokens, tk)
		if m.To == "alice@example.com" {
			token = tk
		}
	}
	weakPassword := "canary-weak"
	mismatch := "canary mismatch password 1"
	e.Get("/auth/reset?token=" + token)
	e.postReset(token, weakPassword)
	e.PostForm("/auth/reset", url.Values{"token": {token}, "password": {freshPassword}, "confirm": {mismatch}})
	e.postReset(token+"x", freshPassword)
	if resp := e.postReset(token, freshPassword); resp.StatusCode != http.StatusOK {
		t.Fatalf("reset: %d", resp.StatusCode)
	}
	e.postReset(token, freshPassword) // used
	mails = append(mails, e.nextMail(t))
	e.Login(t, "alice@example.com", freshPassword)

	canaries := append([]string{freshPassword, oldPassword, weakPassword, mismatch, relayPassword, hashHex(token)}, tokens...)
	for _, m := range mails {
		for _, line := range strings.Split(m.Text, "\n") {
			if len(strings.TrimSpace(line)) > 20 {
				canaries = append(canaries, strings.TrimSpace(line))
			}
		}
		canaries = append(canaries, m.Subject)
	}
	lines := e.Logs.Lines()
	if len(lines) < 10 {
		t.Fatalf("only %d log lines; the canary would prove nothing", len(lines))
	}
	for _, line := range lines {
		for _, c := range canaries {
			if strings.Contains(line, c) {
				t.Errorf("log line contains %q:\n%s", c, line)
			}
		}
	}
}
