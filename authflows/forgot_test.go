package authflows

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

const oldPassword = "correct horse battery staple"

// RT1, RT3, FG3: a reset mail goes to the stored address of the account
// matched case-insensitively after trimming, with a link built from the base
// URL that carries 256 random bits, of which the store keeps only the hash.
func TestForgotMailsResetLink(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{})
	alice := e.CreateUser(t, "alice@example.com", oldPassword)

	e.forgot(t, "  ALICE@Example.COM ")
	m := e.nextMail(t)
	if m.To != "alice@example.com" {
		t.Errorf("mailed to %q, want the stored address", m.To)
	}
	base, token := resetLink(t, m)
	if base != testBaseURL {
		t.Errorf("link base %q, want %q", base, testBaseURL)
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) != 32 {
		t.Fatalf("token %q: %d bytes (%v), want 32 bytes of URL-safe base64", token, len(raw), err)
	}
	for _, want := range []string{"30 minutes", "If this wasn't you, ignore this mail"} {
		if !strings.Contains(m.Text, want) || !strings.Contains(m.HTML, want) {
			t.Errorf("mail lacks %q:\ntext: %s\nhtml: %s", want, m.Text, m.HTML)
		}
	}
	if m.Subject == "" {
		t.Error("no subject")
	}

	u, err := e.Store.ResetTokenUser(t.Context(), storage.HashSecret(token), e.Clock.Now())
	if err != nil || u.ID != alice.ID {
		t.Fatalf("token's SHA-256 finds %+v (%v), want alice", u, err)
	}
	var asStored storage.Hash
	copy(asStored[:], raw)
	if _, err := e.Store.ResetTokenUser(t.Context(), asStored, e.Clock.Now()); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the raw token is a key of the store: %v", err)
	}

	if _, second := resetLink(t, mailedAfterForgot(t, e, "alice@example.com")); second == token {
		t.Fatal("two requests got the same token")
	}
}

func mailedAfterForgot(t *testing.T, e *mailEnv, email string) mailed {
	t.Helper()
	e.forgot(t, email)
	return e.nextMail(t)
}

// RT3: the link comes from the base URL only, whatever the request says its
// host is.
func TestForgotLinkIgnoresRequestHost(t *testing.T) {
	for name, base := range map[string]string{"plain": "", "path prefix": "https://id.example.org/gate/"} {
		t.Run(name, func(t *testing.T) {
			var options []func(*Config)
			want := testBaseURL
			if base != "" {
				u, _ := url.Parse(base)
				options = append(options, func(c *Config) { c.BaseURL = u })
				want = "https://id.example.org/gate"
			}
			e := newMailEnv(t, mailEnvConfig{options: options})
			e.CreateUser(t, "alice@example.com", oldPassword)
			spoofs := []map[string]string{
				{"Host": "evil.example"},
				{"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https"},
				{"Forwarded": "host=evil.example;proto=https"},
				{"Host": "evil.example", "X-Forwarded-Host": "evil2.example", "Forwarded": `for=1.2.3.4;host="evil3.example"`, "X-Original-Host": "evil4.example"},
			}
			for _, headers := range spoofs {
				e.Clock.Advance(10 * time.Minute) // keep the account's bucket filled
				r := e.JSONRequest(http.MethodPost, "/auth/forgot", map[string]string{"email": "alice@example.com"})
				for k, v := range headers {
					if k == "Host" {
						r.Host = v
					} else {
						r.Header.Set(k, v)
					}
				}
				if resp := e.Do(r); resp.StatusCode != http.StatusAccepted {
					t.Fatalf("%v: status %d", headers, resp.StatusCode)
				}
				m := e.nextMail(t)
				if got, _ := resetLink(t, m); got != want {
					t.Errorf("%v: link base %q, want %q", headers, got, want)
				}
				if strings.Contains(m.Raw, "evil") {
					t.Errorf("%v: the mail mentions a spoofed host", headers)
				}
			}
		})
	}
}

// FG1: status, headers and body are the same for a registered account, a
// password-less one, an unknown address and a throttled request, as JSON
// and as a form post.
func TestForgotAnswerIsIdentical(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{})
	e.CreateUser(t, "alice@example.com", oldPassword)
	e.CreateUser(t, "oauth-only@example.com", "")
	e.CreateUser(t, "busy@example.com", oldPassword)
	for range 3 {
		e.forgot(t, "busy@example.com") // the account's bucket is now empty
	}

	type answer struct {
		status int
		header http.Header
		body   string
	}
	emails := []string{"alice@example.com", "oauth-only@example.com", "nobody@example.com", "ALICE@example.com", "busy@example.com"}
	for _, form := range []bool{false, true} {
		var first answer
		for i, email := range emails {
			var resp *http.Response
			if form {
				resp = e.PostForm("/auth/forgot", url.Values{"email": {email}})
			} else {
				resp = e.PostJSON("/auth/forgot", map[string]string{"email": email})
			}
			a := answer{resp.StatusCode, resp.Header, e.Body(t, resp)}
			if i == 0 {
				first = a
				continue
			}
			if !reflect.DeepEqual(a, first) {
				t.Errorf("form=%v %s: answer %+v\ndiffers from %s: %+v", form, email, a, emails[0], first)
			}
		}
		if form && (first.status != http.StatusSeeOther || first.header.Get("Location") != "/auth/forgot?sent=1") {
			t.Errorf("form answer %d %q, want 303 to /auth/forgot?sent=1", first.status, first.header.Get("Location"))
		}
		if !form && (first.status != http.StatusAccepted || first.body != `{"status":"accepted"}`+"\n" ||
			first.header.Get("Content-Type") != "application/json" || first.header.Get("Cache-Control") != "no-store") {
			t.Errorf("JSON answer %+v, want 202 {\"status\":\"accepted\"}", first)
		}
	}

	page := e.Get("/auth/forgot?sent=1")
	if body := e.Body(t, page); page.StatusCode != http.StatusOK || !strings.Contains(body, "Check your mail") || !strings.Contains(body, "30 minutes") {
		t.Fatalf("sent page: %d %s", page.StatusCode, body)
	}
}

// FG3: the email is exactly one string and an address; anything else is a
// 400 (or 413 for an oversized body), and no mail goes out.
func TestForgotRefusesMalformedInput(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{})
	e.CreateUser(t, "alice@example.com", oldPassword)
	bodies := []string{
		`{"email":["alice@example.com","eve@evil.example"]}`,
		`{"email":{"address":"alice@example.com"}}`,
		`{"email":5}`,
		`{"email":null}`,
		`{"email":true}`,
		`{}`,
		`{"email":""}`,
		`{"email":"alice"}`,
		`{"email":"Alice <alice@example.com>"}`,
		`{"email":"alice@example.com, eve@evil.example"}`,
		`{"email":"alice@example.com\r\nBcc: eve@evil.example"}`,
		`not json`,
		`{"email":"alice@example.com"} {"email":"eve@evil.example"}`,
		`["alice@example.com"]`,
	}
	for _, body := range bodies {
		if code := e.ProblemCode(t, e.PostJSON("/auth/forgot", body), http.StatusBadRequest); code != "invalid_request" {
			t.Errorf("%s: code %q", body, code)
		}
	}
	r := e.NewRequest(http.MethodPost, "/auth/forgot", strings.NewReader("email=alice@example.com&email=eve@evil.example"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Accept", "application/json")
	if resp := e.Do(r); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("repeated form field: status %d", resp.StatusCode)
	}
	huge := `{"email":"alice@example.com","pad":"` + strings.Repeat("x", web.MaxAuthBody) + `"}`
	if code := e.ProblemCode(t, e.PostJSON("/auth/forgot", huge), http.StatusRequestEntityTooLarge); code != "body_too_large" {
		t.Errorf("oversized body: code %q", code)
	}
	page := e.PostForm("/auth/forgot", url.Values{"email": {"not an address"}})
	if body := e.Body(t, page); page.StatusCode != http.StatusBadRequest || !strings.Contains(body, "valid email") {
		t.Errorf("form with a bad address: %d %s", page.StatusCode, body)
	}
	e.noMail(t)
}

// FG4: three mails per account per 15 minutes and 60 requests per client IP
// per minute pass; beyond that the answer stays the same and nothing is
// mailed (the newest token stays valid: none was issued after it).
func TestForgotThrottlesSilently(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{})
	e.CreateUser(t, "alice@example.com", oldPassword)

	var last string
	for range 3 {
		last = e.resetToken(t, "alice@example.com")
	}
	e.forgot(t, "alice@example.com") // 202, checked by forgot
	e.noMail(t)
	if _, err := e.Store.ResetTokenUser(t.Context(), storage.HashSecret(last), e.Clock.Now()); err != nil {
		t.Fatalf("a throttled request replaced the token: %v", err)
	}
	if n := len(e.Logs.Events("forgot_throttled")); n != 1 {
		t.Errorf("%d forgot_throttled events, want 1", n)
	}
	// The per-account throttle exists only for known accounts: its count
	// joins "accepted" so that no label tells the account exists.
	if v := e.CounterValue(t, "gatehouse_forgot_requests_total", map[string]string{"result": "throttled"}); v != 0 {
		t.Errorf("throttled counter %v, want 0 (per-account throttling counts as accepted)", v)
	}
	if v := e.CounterValue(t, "gatehouse_forgot_requests_total", map[string]string{"result": "accepted"}); v != 4 {
		t.Errorf("accepted counter %v, want 4", v)
	}
	e.Clock.Advance(5 * time.Minute) // one mail's worth of refill
	if m := mailedAfterForgot(t, e, "alice@example.com"); m.To != "alice@example.com" {
		t.Fatalf("after the refill: mail to %s", m.To)
	}

	// Per client IP: 60 requests pass (the 60th, for alice, is mailed), the
	// 61st is not mailed although alice's own bucket has room; another IP is.
	e.Clock.Advance(time.Hour)
	from := func(ip string) *http.Request {
		r := e.JSONRequest(http.MethodPost, "/auth/forgot", map[string]string{"email": "alice@example.com"})
		r.RemoteAddr = ip + ":5555"
		return r
	}
	for i := range 59 {
		r := e.JSONRequest(http.MethodPost, "/auth/forgot", map[string]string{"email": fmt.Sprintf("nobody%d@example.com", i)})
		r.RemoteAddr = "203.0.113.7:5555"
		if resp := e.Do(r); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	if resp := e.Do(from("203.0.113.7")); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("60th request: status %d", resp.StatusCode)
	}
	if m := e.nextMail(t); m.To != "alice@example.com" {
		t.Fatalf("60th request: mail to %s", m.To)
	}
	if got := e.Logs.Events("forgot_throttled"); len(got) != 1 {
		t.Fatalf("throttled within the floor: %q", got)
	}
	if resp := e.Do(from("203.0.113.7")); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("throttled IP: status %d, want the same 202", resp.StatusCode)
	}
	e.noMail(t)
	if got := e.Logs.Events("forgot_throttled"); len(got) != 2 || !strings.Contains(got[1], "scope=ip") {
		t.Errorf("forgot_throttled events %q", got)
	}
	e.Do(from("203.0.113.8"))
	if m := e.nextMail(t); m.To != "alice@example.com" {
		t.Fatalf("other IP: mail to %s", m.To)
	}
}

// FG5: asking for a reset changes nothing else: sessions and password stay.
func TestForgotChangesNothingElse(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{})
	alice := e.CreateUser(t, "alice@example.com", oldPassword)
	cookie := e.Login(t, "alice@example.com", oldPassword)

	e.resetToken(t, "alice@example.com")

	if _, err := e.Store.Session(t.Context(), storage.HashSecret(cookie.Value)); err != nil {
		t.Fatalf("session after forgot: %v", err)
	}
	after, err := e.Store.UserByID(t.Context(), alice.ID)
	if err != nil || after.PasswordHash != alice.PasswordHash || after.Email != alice.Email {
		t.Fatalf("user changed: %+v (%v)", after, err)
	}
	e.Login(t, "alice@example.com", oldPassword)
}

// A password-less (OAuth-only) account gets the mail too, and the reset
// gives it a password.
func TestForgotPasswordlessAccount(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{})
	e.CreateUser(t, "oauth-only@example.com", "")
	token := e.resetToken(t, "oauth-only@example.com")
	if resp := e.postReset(token, "a brand new passphrase"); resp.StatusCode != http.StatusOK {
		t.Fatalf("reset: %d %s", resp.StatusCode, e.Body(t, resp))
	}
	e.Login(t, "oauth-only@example.com", "a brand new passphrase")
}

// The forgot page is a form posting email to /auth/forgot.
func TestForgotPage(t *testing.T) {
	e := newTestEnv(t)
	resp := e.Get("/auth/forgot")
	body := e.Body(t, resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `action="/auth/forgot"`) || !strings.Contains(body, `name="email"`) {
		t.Fatalf("forgot page: %d %s", resp.StatusCode, body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Fatalf("CSP %q", csp)
	}
}

// LG2: forgot events say whether the account is known (with its id) without
// naming the address; counters follow.
func TestForgotEventsAndMetrics(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{})
	alice := e.CreateUser(t, "alice@example.com", oldPassword)
	e.forgot(t, "alice@example.com")
	e.forgot(t, "nobody@example.com")
	got := e.Logs.Events("forgot_requested")
	if len(got) != 2 {
		t.Fatalf("forgot_requested events: %q", got)
	}
	var known, unknown string
	for _, line := range got {
		if strings.Contains(line, "known=true") {
			known = line
		} else {
			unknown = line
		}
	}
	if !strings.Contains(known, "user_id="+alice.ID) || !strings.Contains(known, "client_ip="+testClientIP) {
		t.Errorf("known event %q", known)
	}
	if !strings.Contains(unknown, "known=false") || strings.Contains(unknown, "nobody") {
		t.Errorf("unknown event %q", unknown)
	}
	for result, want := range map[string]float64{"accepted": 2, "mailed": 0, "unknown": 0} {
		if v := e.CounterValue(t, "gatehouse_forgot_requests_total", map[string]string{"result": result}); v != want {
			t.Errorf("forgot %s counter %v, want %v", result, v, want)
		}
	}
}
