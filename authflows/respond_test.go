package authflows

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

func multipartBody(t *testing.T, fields [][2]string) (string, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, f := range fields {
		if err := w.WriteField(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.FormDataContentType(), buf.String()
}

func TestReadInput(t *testing.T) {
	mpType, mpBody := multipartBody(t, [][2]string{{"email", "a@example.com"}, {"password", "pw"}})
	mpTwiceType, mpTwiceBody := multipartBody(t, [][2]string{{"email", "a@example.com"}, {"email", "b@example.com"}})
	tests := []struct {
		name, contentType, target, body string
		want                            map[string]string // nil: an error
		status                          int               // of the error's problem
	}{
		{"json", "application/json", "/", `{"email":"a@example.com","password":"pw"}`, map[string]string{"email": "a@example.com", "password": "pw"}, 0},
		{"json with charset", "application/json; charset=utf-8", "/", `{"email":"a@example.com"}`, map[string]string{"email": "a@example.com"}, 0},
		{"no content type is JSON", "", "/", `{"email":"a@example.com"}`, map[string]string{"email": "a@example.com"}, 0},
		{"absent fields are empty", "application/json", "/", `{}`, map[string]string{}, 0},
		{"unknown fields ignored", "application/json", "/", `{"email":"a@example.com","admin":true}`, map[string]string{"email": "a@example.com"}, 0},
		{"escapes decoded", "application/json", "/", `{"email":"a\u0040example.com"}`, map[string]string{"email": "a@example.com"}, 0},
		{"array", "application/json", "/", `{"email":["a@example.com","b@example.com"]}`, nil, 400},
		{"object", "application/json", "/", `{"email":{"$ne":""}}`, nil, 400},
		{"number", "application/json", "/", `{"email":42}`, nil, 400},
		{"boolean", "application/json", "/", `{"email":true}`, nil, 400},
		{"null", "application/json", "/", `{"email":null}`, nil, 400},
		{"top-level array", "application/json", "/", `[{"email":"a@example.com"}]`, nil, 400},
		{"top-level string", "application/json", "/", `"a@example.com"`, nil, 400},
		{"two documents", "application/json", "/", `{"email":"a@example.com"} {"email":"b@example.com"}`, nil, 400},
		{"field twice", "application/json", "/", `{"email":"a@example.com","email":"b@example.com"}`, nil, 400},
		{"field twice, one null", "application/json", "/", `{"email":"a@example.com","email":null}`, nil, 400},
		{"unknown field twice", "application/json", "/", `{"x":1,"x":[2],"email":"a@example.com"}`, map[string]string{"email": "a@example.com"}, 0},
		{"null with spaces", "application/json", "/", `{"email": null }`, nil, 400},
		{"top-level null", "application/json", "/", `null`, nil, 400},
		{"nested unknown field", "application/json", "/", `{"meta":{"email":"x"},"email":"a@example.com"}`, map[string]string{"email": "a@example.com"}, 0},
		{"trailing garbage", "application/json", "/", `{"email":"a@example.com"}x`, nil, 400},
		{"unclosed object", "application/json", "/", `{"email":"a@example.com",`, nil, 400},
		{"broken JSON", "application/json", "/", `{"email":"a@example.com"`, nil, 400},
		{"empty body", "application/json", "/", ``, nil, 400},
		{"form", "application/x-www-form-urlencoded", "/", "email=a%40example.com&password=pw", map[string]string{"email": "a@example.com", "password": "pw"}, 0},
		{"form repeated value", "application/x-www-form-urlencoded", "/", "email=a%40example.com&email=b%40example.com", nil, 400},
		{"form ignores the query", "application/x-www-form-urlencoded", "/?password=from-url&email=x", "email=a%40example.com", map[string]string{"email": "a@example.com"}, 0},
		{"form bad escape", "application/x-www-form-urlencoded", "/", "email=%zz", nil, 400},
		{"multipart", mpType, "/", mpBody, map[string]string{"email": "a@example.com", "password": "pw"}, 0},
		{"multipart repeated value", mpTwiceType, "/", mpTwiceBody, nil, 400},
		{"text/plain", "text/plain", "/", `{"email":"a@example.com"}`, nil, 415},
		{"xml", "application/xml", "/", `<email>a@example.com</email>`, nil, 415},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, tt.target, strings.NewReader(tt.body))
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			got, err := readInput(r, "email", "password")
			if tt.want == nil {
				var in inputError
				if !errors.As(err, &in) {
					t.Fatalf("readInput = %v, %v; want an input error", got, err)
				}
				if in.problem.Status != tt.status {
					t.Errorf("status %d, want %d", in.problem.Status, tt.status)
				}
				return
			}
			if err != nil {
				t.Fatalf("readInput: %v", err)
			}
			if !jsonEqual(got, tt.want) {
				t.Errorf("readInput = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestReadInputBodyLimit(t *testing.T) {
	for _, ct := range []string{"application/json", "application/x-www-form-urlencoded"} {
		t.Run(ct, func(t *testing.T) {
			var body string
			if ct == "application/json" {
				body = `{"email":"` + strings.Repeat("a", web.MaxAuthBody) + `"}`
			} else {
				body = "email=" + strings.Repeat("a", web.MaxAuthBody)
			}
			w := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
			r.Header.Set("Content-Type", ct)
			r.Body = http.MaxBytesReader(w, r.Body, web.MaxAuthBody)
			_, err := readInput(r, "email")
			if p := problemFor(err); p.Status != http.StatusRequestEntityTooLarge {
				t.Errorf("readInput = %v (status %d), want 413", err, p.Status)
			}
		})
	}
}

// PX6: bodies under /auth/ are capped at 16 KiB, whether announced by
// Content-Length or sent chunked, before any hashing.
func TestBodyTooLarge(t *testing.T) {
	env := newTestEnv(t)
	padding := strings.Repeat("x", web.MaxAuthBody)
	body := `{"email":"a@example.com","password":"` + padding + `"}`
	form := "email=a%40example.com&password=" + padding
	for _, tt := range []struct {
		form, chunked bool
	}{{false, false}, {false, true}, {true, false}, {true, true}} {
		chunked := tt.chunked
		r := env.JSONRequest(http.MethodPost, "/auth/login", body)
		if tt.form {
			r = env.FormRequest("/auth/login", url.Values{})
			r.Body, r.ContentLength = io.NopCloser(strings.NewReader(form)), int64(len(form))
			r.Header.Set("Accept", "application/json")
		}
		if chunked {
			r.ContentLength = -1
			r.Body = io.NopCloser(r.Body)
		}
		before := env.HashRuns()
		resp := env.Do(r)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(env.Body(t, resp), "body_too_large") {
			t.Errorf("form=%v chunked=%v: status %d, want 413 body_too_large", tt.form, chunked, resp.StatusCode)
		}
		if env.HashRuns() != before {
			t.Errorf("chunked=%v: an oversized body was hashed", chunked)
		}
	}
	// Just under the cap is read.
	fits := `{"email":"a@example.com","password":"` + strings.Repeat("x", web.MaxAuthBody-64) + `"}`
	if resp := env.PostJSON("/auth/login", fits); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("body under the cap: status %d, want 401", resp.StatusCode)
	}
}

// FG3-style input rules, through the login endpoint: nothing is hashed for a
// malformed request.
func TestLoginMalformedInput(t *testing.T) {
	env := newTestEnv(t)
	env.CreateUser(t, aliceEmail, alicePassword)
	tests := []struct {
		name, contentType, body string
		status                  int
		code                    string
	}{
		{"email array", "application/json", `{"email":["alice@example.com"],"password":"correct horse battery staple"}`, 400, "invalid_request"},
		{"email object", "application/json", `{"email":{"a":1},"password":"x"}`, 400, "invalid_request"},
		{"email number", "application/json", `{"email":1,"password":"x"}`, 400, "invalid_request"},
		{"password array", "application/json", `{"email":"alice@example.com","password":["a","b"]}`, 400, "invalid_request"},
		{"rd object", "application/json", `{"email":"alice@example.com","password":"x","rd":{}}`, 400, "invalid_request"},
		{"repeated form value", "application/x-www-form-urlencoded", "email=alice%40example.com&password=a&password=b", 400, "invalid_request"},
		{"unsupported type", "text/plain", `{"email":"alice@example.com","password":"x"}`, 415, "unsupported_media_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := env.NewRequest(http.MethodPost, "/auth/login", strings.NewReader(tt.body))
			r.Header.Set("Content-Type", tt.contentType)
			r.Header.Set("Accept", "application/json")
			before := env.HashRuns()
			resp := env.Do(r)
			if web.WantsHTML(r) { // a form post gets the error page
				if resp.StatusCode != tt.status || !strings.Contains(env.Body(t, resp), tt.code) {
					t.Errorf("status %d, want a %d page naming %s", resp.StatusCode, tt.status, tt.code)
				}
			} else if code := env.ProblemCode(t, resp, tt.status); code != tt.code {
				t.Errorf("code %q, want %q", code, tt.code)
			}
			if env.HashRuns() != before {
				t.Error("a malformed request was hashed")
			}
		})
	}
}

// POST forms are refused when a browser says they come from another site.
func TestCrossOriginPostRefused(t *testing.T) {
	env := newTestEnv(t)
	env.CreateUser(t, aliceEmail, alicePassword)
	cookie := env.Login(t, aliceEmail, alicePassword)
	form := url.Values{"email": {aliceEmail}, "password": {alicePassword}}
	tests := []struct {
		name   string
		header map[string]string
		path   string
		status int
	}{
		{"cross-site login", map[string]string{"Sec-Fetch-Site": "cross-site"}, "/auth/login", http.StatusForbidden},
		{"same-site login", map[string]string{"Sec-Fetch-Site": "same-site"}, "/auth/login", http.StatusForbidden},
		{"foreign Origin, no Sec-Fetch-Site", map[string]string{"Origin": "https://evil.example"}, "/auth/login", http.StatusForbidden},
		{"cross-site logout", map[string]string{"Sec-Fetch-Site": "cross-site"}, "/auth/logout", http.StatusForbidden},
		{"same-origin login", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": testBaseURL}, "/auth/login", http.StatusSeeOther},
		{"no browser headers", nil, "/auth/login", http.StatusSeeOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := env.FormRequest(tt.path, form)
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			var c *http.Cookie
			if tt.path == "/auth/logout" {
				c = cookie
			}
			before := env.HashRuns()
			resp := env.Do(r, c)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, env.Body(t, resp))
			}
			if tt.status == http.StatusForbidden {
				if body := env.Body(t, resp); !strings.Contains(body, "cross_origin") {
					t.Errorf("body does not name cross_origin: %s", body)
				}
				if env.HashRuns() != before || env.SessionCookie(resp) != nil {
					t.Error("a refused request did work")
				}
			}
		})
	}
	// The cross-site logout left the session alone.
	if resp := env.Get("/auth/me", cookie); resp.StatusCode != http.StatusOK {
		t.Errorf("session after a cross-site logout: %d", resp.StatusCode)
	}
}

// Browsers get pages, other clients problem+json, for the same error.
func TestErrorNegotiation(t *testing.T) {
	env := newTestEnv(t)
	tests := []struct {
		name, method, path, accept string
		status                     int
		contentType                string
	}{
		{"unknown path, JSON", http.MethodGet, "/auth/nope", "", 404, "application/problem+json"},
		{"unknown path, browser", http.MethodGet, "/auth/nope", "text/html,*/*;q=0.8", 404, "text/html; charset=utf-8"},
		{"unknown deep path", http.MethodPost, "/auth/login/extra/segments", "", 404, "application/problem+json"},
		{"me without session, JSON", http.MethodGet, "/auth/me", "application/json", 401, "application/problem+json"},
		{"me without session, browser", http.MethodGet, "/auth/me", "text/html", 401, "text/html; charset=utf-8"},
		{"JSON preferred by q", http.MethodGet, "/auth/me", "text/html;q=0.5, application/json", 401, "application/problem+json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := env.NewRequest(tt.method, tt.path, nil)
			if tt.accept != "" {
				r.Header.Set("Accept", tt.accept)
			}
			resp := env.Do(r)
			if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != tt.contentType {
				t.Errorf("status %d %q, want %d %q", resp.StatusCode, resp.Header.Get("Content-Type"), tt.status, tt.contentType)
			}
		})
	}
	resp := env.Get("/auth/nope")
	if code := env.ProblemCode(t, resp, http.StatusNotFound); code != "not_found" {
		t.Errorf("unknown path: code %q", code)
	}
}

// Nothing under /auth/ may be cached: every answer, errors included, says
// no-store, and carries the other protective headers.
func TestNothingCacheable(t *testing.T) {
	env := newTestEnv(t)
	env.CreateUser(t, aliceEmail, alicePassword)
	cookie := env.Login(t, aliceEmail, alicePassword)
	login := map[string]string{"email": aliceEmail, "password": alicePassword}
	big := env.JSONRequest(http.MethodPost, "/auth/login", `{"p":"`+strings.Repeat("x", web.MaxAuthBody)+`"}`)
	crossSite := env.FormRequest("/auth/login", url.Values{})
	crossSite.Header.Set("Sec-Fetch-Site", "cross-site")
	plain := env.NewRequest(http.MethodPost, "/auth/login", strings.NewReader("x"))
	plain.Header.Set("Content-Type", "text/plain")
	requests := []struct {
		name string
		r    *http.Request
		c    *http.Cookie
	}{
		{"login page", env.NewRequest(http.MethodGet, "/auth/login", nil), nil},
		{"stylesheet", env.NewRequest(http.MethodGet, "/auth/assets/style.css", nil), nil},
		{"login ok", env.JSONRequest(http.MethodPost, "/auth/login", login), nil},
		{"login form ok", env.FormRequest("/auth/login", url.Values{"email": {aliceEmail}, "password": {alicePassword}}), nil},
		{"login failed", env.JSONRequest(http.MethodPost, "/auth/login", map[string]string{"email": aliceEmail, "password": "wrong"}), nil},
		{"login failed page", env.FormRequest("/auth/login", url.Values{"email": {aliceEmail}, "password": {"wrong"}}), nil},
		{"malformed", env.JSONRequest(http.MethodPost, "/auth/login", `[`), nil},
		{"too large", big, nil},
		{"unsupported type", plain, nil},
		{"cross-site", crossSite, nil},
		{"me", env.NewRequest(http.MethodGet, "/auth/me", nil), cookie},
		{"me unauthenticated", env.NewRequest(http.MethodGet, "/auth/me", nil), nil},
		{"unknown path", env.NewRequest(http.MethodGet, "/auth/unknown", nil), nil},
		{"wrong method", env.NewRequest(http.MethodGet, "/auth/logout", nil), nil},
		{"logout", env.JSONRequest(http.MethodPost, "/auth/logout", nil), cookie},
	}
	for _, tt := range requests {
		t.Run(tt.name, func(t *testing.T) {
			resp := env.Do(tt.r, tt.c)
			h := resp.Header
			if cc := h.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("status %d: Cache-Control %q, want no-store", resp.StatusCode, cc)
			}
			if h.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("status %d: no nosniff", resp.StatusCode)
			}
			if strings.HasPrefix(h.Get("Content-Type"), "text/html") && h.Get("Content-Security-Policy") == "" {
				t.Errorf("status %d: page without CSP", resp.StatusCode)
			}
		})
	}
	// And the ones that answer with a status from a rate limit or busy hasher.
	for range 60 {
		env.PostJSON("/auth/login", login)
	}
	if resp := env.PostJSON("/auth/login", login); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("429: status %d Cache-Control %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
}

// DS1: unauthenticated traffic cannot grow the database. Failed, throttled
// and oversized sign-ins,
// random session cookies on /auth/me and logout, and made-up reset tokens
// (GET and POST) commit no bbolt transaction at all.
func TestUnauthenticatedTrafficWritesNothing(t *testing.T) {
	env := newTestEnv(t)
	env.CreateUser(t, aliceEmail, alicePassword)
	env.CreateUser(t, "oauth-only@example.com", "")
	random := &http.Cookie{Name: env.Config.CookieName, Value: newSecret()}
	before := env.TxID(t)
	sizeBefore := fileSize(t, env.DBPath)

	for i := range 12 { // the account's 10 failures and throttled ones after
		env.PostJSON("/auth/login", map[string]string{"email": aliceEmail, "password": "wrong password"})
		env.PostForm("/auth/login", url.Values{"email": {"oauth-only@example.com"}, "password": {"any password at all"}})
		env.PostJSON("/auth/login", map[string]string{"email": fmt.Sprintf("nobody%d@example.com", i), "password": "wrong password"}, random)
	}
	env.PostJSON("/auth/login", map[string]string{"email": "x@example.com", "password": strings.Repeat("x", password.MaxLength+1)})
	// forgot for unknown addresses commits a fixed-size marker (a 202 is
	// durable): TestForgotUnknownAddressesDoNotGrowFile.
	env.Get("/auth/me", random)
	env.PostJSON("/auth/logout", nil, random)
	env.PostForm("/auth/logout", url.Values{}, random)
	env.Get("/auth/reset?token=" + newSecret())
	env.PostJSON("/auth/reset", map[string]string{"token": newSecret(), "password": "a fresh passphrase 42"})
	env.PostForm("/auth/reset", url.Values{"token": {newSecret()}, "password": {"a fresh passphrase 42"}, "confirm": {"a fresh passphrase 42"}})

	if after := env.TxID(t); after != before {
		t.Errorf("bbolt txid %d → %d: unauthenticated requests wrote %d transactions", before, after, after-before)
	}
	if size := fileSize(t, env.DBPath); size != sizeBefore {
		t.Errorf("database file grew from %d to %d bytes", sizeBefore, size)
	}
	// Control: a sign-in writes a session, and the probe sees it.
	env.Clock.Advance(time.Hour)
	env.Login(t, aliceEmail, alicePassword)
	if env.TxID(t) == before {
		t.Fatal("a sign-in did not move the txid: the probe does not see commits")
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// PX6, DS2 on the reset flow: an oversized body is refused with 413 before
// the token is looked at or anything is hashed, and the token stays usable;
// forgot and logout refuse one too.
func TestBodyTooLargeResetForgotLogout(t *testing.T) {
	env := newTestEnv(t)
	alice := env.CreateUser(t, aliceEmail, alicePassword)
	cookie := env.StartSession(t, alice)
	token := env.IssueResetToken(t, alice)
	padding := strings.Repeat("x", web.MaxAuthBody)
	for _, tt := range []struct {
		path, body string
		chunked    bool
	}{
		{"/auth/reset", `{"token":"` + token + `","password":"a fresh passphrase 42","pad":"` + padding + `"}`, false},
		{"/auth/reset", `{"token":"` + token + `","password":"` + padding + `"}`, true},
		{"/auth/forgot", `{"email":"alice@example.com","pad":"` + padding + `"}`, true},
		{"/auth/logout", `{"pad":"` + padding + `"}`, false},
	} {
		r := env.JSONRequest(http.MethodPost, tt.path, tt.body)
		if tt.chunked {
			r.ContentLength = -1
			r.Body = io.NopCloser(r.Body)
		}
		before := env.HashRuns()
		resp := env.Do(r, cookie)
		if code := env.ProblemCode(t, resp, http.StatusRequestEntityTooLarge); code != "body_too_large" {
			t.Errorf("%s chunked=%v: code %q", tt.path, tt.chunked, code)
		}
		if env.HashRuns() != before {
			t.Errorf("%s chunked=%v: hashed", tt.path, tt.chunked)
		}
	}
	if !env.ResetTokenValid(t, token) {
		t.Error("an oversized reset consumed the token")
	}
	if resp := env.Get("/auth/me", cookie); resp.StatusCode != http.StatusOK {
		t.Errorf("an oversized logout ended the session: %d", resp.StatusCode)
	}
}

// CSRF: cross-site form posts to forgot and reset are refused before they
// do anything: no token is issued or consumed.
func TestCrossOriginForgotAndResetRefused(t *testing.T) {
	env := newTestEnv(t)
	alice := env.CreateUser(t, aliceEmail, alicePassword)
	token := env.IssueResetToken(t, alice)
	txid := env.TxID(t)
	for _, tt := range []struct {
		path string
		form url.Values
	}{
		{"/auth/forgot", url.Values{"email": {aliceEmail}}},
		{"/auth/reset", url.Values{"token": {token}, "password": {"attacker's passphrase"}, "confirm": {"attacker's passphrase"}}},
	} {
		for _, header := range []map[string]string{{"Sec-Fetch-Site": "cross-site"}, {"Origin": "https://evil.example"}} {
			r := env.FormRequest(tt.path, tt.form)
			for k, v := range header {
				r.Header.Set(k, v)
			}
			resp := env.Do(r)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(env.Body(t, resp), "cross_origin") {
				t.Errorf("%s %v: status %d, want 403 cross_origin", tt.path, header, resp.StatusCode)
			}
		}
	}
	if env.TxID(t) != txid || !env.ResetTokenValid(t, token) {
		t.Error("a refused cross-site post wrote to the store")
	}
	// Control: the same-origin post goes through.
	r := env.FormRequest("/auth/reset", url.Values{"token": {token}, "password": {"a fresh passphrase 42"}, "confirm": {"a fresh passphrase 42"}})
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	if resp := env.Do(r); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("same-origin reset: status %d, want 303", resp.StatusCode)
	}
}

// Nothing under /auth/ is cacheable, on the reset flow too: the forgot
// pages, its answers, the reset page, its answers and errors.
func TestNothingCacheableResetFlow(t *testing.T) {
	env := newTestEnv(t)
	alice := env.CreateUser(t, aliceEmail, alicePassword)
	token := env.IssueResetToken(t, alice)
	requests := map[string]*http.Request{
		"forgot page":          env.NewRequest(http.MethodGet, "/auth/forgot", nil),
		"forgot sent page":     env.NewRequest(http.MethodGet, "/auth/forgot?sent=1", nil),
		"forgot 202":           env.JSONRequest(http.MethodPost, "/auth/forgot", map[string]string{"email": "nobody@example.com"}),
		"forgot 303":           env.FormRequest("/auth/forgot", url.Values{"email": {"nobody@example.com"}}),
		"forgot 400":           env.JSONRequest(http.MethodPost, "/auth/forgot", `{"email":["a@example.com"]}`),
		"forgot 400 page":      env.FormRequest("/auth/forgot", url.Values{"email": {"nope"}}),
		"reset page":           env.NewRequest(http.MethodGet, "/auth/reset?token="+token, nil),
		"reset page, bad":      env.NewRequest(http.MethodGet, "/auth/reset?token=bogus", nil),
		"reset invalid_token":  env.JSONRequest(http.MethodPost, "/auth/reset", map[string]string{"token": "bogus", "password": "a fresh passphrase 42"}),
		"reset weak_password":  env.JSONRequest(http.MethodPost, "/auth/reset", map[string]string{"token": token, "password": "short"}),
		"reset weak page":      env.FormRequest("/auth/reset", url.Values{"token": {token}, "password": {"short"}, "confirm": {"short"}}),
		"reset 415":            env.NewRequest(http.MethodPost, "/auth/reset", strings.NewReader("x")),
		"reset wrong method":   env.NewRequest(http.MethodPut, "/auth/reset", nil),
		"reset, form, success": env.FormRequest("/auth/reset", url.Values{"token": {token}, "password": {"a fresh passphrase 42"}, "confirm": {"a fresh passphrase 42"}}),
	}
	requests["reset 415"].Header.Set("Content-Type", "text/plain")
	for _, name := range slices.Sorted(maps.Keys(requests)) {
		resp := env.Do(requests[name])
		if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%s: status %d, Cache-Control %q, want no-store", name, resp.StatusCode, cc)
		}
		if strings.HasPrefix(name, "reset") && resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: status %d, Referrer-Policy %q", name, resp.StatusCode, resp.Header.Get("Referrer-Policy"))
		}
		if name == "reset, form, success" && resp.StatusCode != http.StatusSeeOther {
			t.Errorf("%s: status %d, want 303 (the token was still valid)", name, resp.StatusCode)
		}
	}
}
