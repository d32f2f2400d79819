package authflows

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// SS1: session ids (and the other secrets) are 256 random bits, URL-safe.
func TestNewSecret(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		s := newSecret()
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || len(b) != 32 {
			t.Fatalf("%q: %d bytes, %v; want 32", s, len(b), err)
		}
		if seen[s] {
			t.Fatalf("%q drawn twice", s)
		}
		seen[s] = true
	}
}

// SS1: the store holds the session under SHA-256 of its id; the raw id is
// nowhere in the database file.
func TestSessionStoredByHash(t *testing.T) {
	env := newTestEnv(t)
	alice := env.CreateUser(t, aliceEmail, alicePassword)
	cookie := env.Login(t, aliceEmail, alicePassword)

	s, err := env.Store.Session(t.Context(), storage.HashSecret(cookie.Value))
	if err != nil {
		t.Fatalf("session by hash: %v", err)
	}
	now := env.Clock.Now()
	if s.UserID != alice.ID || s.Email != aliceEmail || !s.CreatedAt.Equal(now) || !s.ExpiresAt.Equal(now.Add(env.Config.SessionTTL)) {
		t.Errorf("session %+v", s)
	}
	// Close first, so that every page is in the file.
	if err := env.Store.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(env.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte(cookie.Value)) {
		t.Error("the database file contains the raw session id")
	}
	if hash := storage.HashSecret(cookie.Value); !bytes.Contains(data, hash[:]) {
		t.Error("the database file lacks the session's hash: wrong file?")
	}
}

// SS2: the cookie's attributes, per --cookie-secure and --session-ttl.
func TestSessionCookieAttributes(t *testing.T) {
	tests := []struct {
		secure bool
		ttl    time.Duration
	}{
		{false, 168 * time.Hour},
		{true, 168 * time.Hour},
		{true, 90 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.ttl.String()+map[bool]string{true: " secure", false: ""}[tt.secure], func(t *testing.T) {
			env := newTestEnv(t, func(c *Config) { c.CookieSecure = tt.secure; c.SessionTTL = tt.ttl })
			env.CreateUser(t, aliceEmail, alicePassword)
			resp := env.PostJSON("/auth/login", map[string]string{"email": aliceEmail, "password": alicePassword})
			c := env.SessionCookie(resp)
			if c == nil {
				t.Fatal("no session cookie")
			}
			if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure != tt.secure || c.Domain != "" {
				t.Errorf("cookie %+v: want HttpOnly, SameSite=Lax, Path=/, Secure=%v, no Domain", c, tt.secure)
			}
			if c.MaxAge <= 0 || time.Duration(c.MaxAge)*time.Second > tt.ttl {
				t.Errorf("Max-Age %d, want 1..%d", c.MaxAge, int(tt.ttl.Seconds()))
			}
			raw := strings.Join(resp.Header.Values("Set-Cookie"), "\n")
			for _, attr := range []string{"HttpOnly", "SameSite=Lax", "Path=/"} {
				if !strings.Contains(raw, attr) {
					t.Errorf("Set-Cookie %q lacks %s", raw, attr)
				}
			}
			if strings.Contains(raw, "Secure") != tt.secure {
				t.Errorf("Set-Cookie %q: Secure should be %v", raw, tt.secure)
			}

			// The expiring cookie of logout has the same scope.
			out := env.SessionCookie(env.PostJSON("/auth/logout", nil, c))
			if out == nil || out.MaxAge >= 0 || out.Value != "" || out.Path != "/" || !out.HttpOnly || out.Secure != tt.secure {
				t.Errorf("logout cookie %+v: want an expired, empty cookie with the same attributes", out)
			}
		})
	}
}

// SS4: a new id at every sign-in; whatever id the browser brought is never
// promoted and stops working.
func TestSessionFixation(t *testing.T) {
	env := newTestEnv(t)
	alice := env.CreateUser(t, aliceEmail, alicePassword)
	mallory := env.CreateUser(t, "mallory@example.com", "mallory's passphrase")
	tests := []struct {
		name    string
		planted func() *http.Cookie
	}{
		{"random id", func() *http.Cookie { return &http.Cookie{Name: env.Config.CookieName, Value: newSecret()} }},
		{"attacker's own session", func() *http.Cookie { return env.StartSession(t, mallory) }},
		{"victim's previous session", func() *http.Cookie { return env.StartSession(t, alice) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			planted := tt.planted()
			for _, form := range []bool{false, true} {
				var resp *http.Response
				if form {
					resp = env.PostForm("/auth/login", url.Values{"email": {aliceEmail}, "password": {alicePassword}}, planted)
				} else {
					resp = env.PostJSON("/auth/login", map[string]string{"email": aliceEmail, "password": alicePassword}, planted)
				}
				got := env.SessionCookie(resp)
				if got == nil || got.Value == "" {
					t.Fatalf("form=%v: no session cookie (status %d)", form, resp.StatusCode)
				}
				if got.Value == planted.Value {
					t.Fatalf("form=%v: the planted id was kept", form)
				}
				var me struct{ ID string }
				env.DecodeJSON(t, env.Get("/auth/me", got), &me)
				if me.ID != alice.ID {
					t.Errorf("form=%v: new cookie is user %q, want alice", form, me.ID)
				}
				if resp := env.Get("/auth/me", planted); resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("form=%v: planted id answers %d, want 401", form, resp.StatusCode)
				}
				if _, err := env.Store.Session(t.Context(), storage.HashSecret(planted.Value)); !errors.Is(err, storage.ErrNotFound) {
					t.Errorf("form=%v: planted id has a record (%v)", form, err)
				}
			}
		})
	}

	// Two sign-ins from two browsers: two different ids, both valid.
	a, b := env.Login(t, aliceEmail, alicePassword), env.Login(t, aliceEmail, alicePassword)
	if a.Value == b.Value {
		t.Fatal("two sign-ins got the same id")
	}
	for _, c := range []*http.Cookie{a, b} {
		if resp := env.Get("/auth/me", c); resp.StatusCode != http.StatusOK {
			t.Errorf("session of another browser stopped working: %d", resp.StatusCode)
		}
	}
}

// SS5: sessions end server-side after the absolute lifetime and after the
// idle timeout, whatever the browser keeps.
func TestSessionExpiry(t *testing.T) {
	tests := []struct {
		name      string
		ttl, idle time.Duration
		alive     time.Duration // still valid this long after sign-in
		dead      time.Duration // invalid from here
	}{
		{"absolute", 2 * time.Hour, 0, 2*time.Hour - time.Second, 2 * time.Hour},
		{"idle", 48 * time.Hour, time.Hour, time.Hour - time.Second, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t, func(c *Config) { c.SessionTTL = tt.ttl; c.SessionIdleTTL = tt.idle })
			env.CreateUser(t, aliceEmail, alicePassword)
			cookie := env.Login(t, aliceEmail, alicePassword)
			env.Clock.Advance(tt.alive)
			if resp := env.Get("/auth/me", cookie); resp.StatusCode != http.StatusOK {
				t.Fatalf("after %v: %d, want 200", tt.alive, resp.StatusCode)
			}
			env.Clock.Advance(tt.dead - tt.alive)
			if code := env.ProblemCode(t, env.Get("/auth/me", cookie), http.StatusUnauthorized); code != "unauthenticated" {
				t.Errorf("after %v: code %q", tt.dead, code)
			}
		})
	}
}

// SS6: logout is a POST; it deletes the record and expires the cookie.
func TestLogout(t *testing.T) {
	env := newTestEnv(t)
	env.CreateUser(t, aliceEmail, alicePassword)

	t.Run("GET is not logout", func(t *testing.T) {
		cookie := env.Login(t, aliceEmail, alicePassword)
		for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete} {
			resp := env.Do(env.NewRequest(method, "/auth/logout", nil), cookie)
			if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("%s /auth/logout: %d, want 404 or 405", method, resp.StatusCode)
			}
			if env.SessionCookie(resp) != nil {
				t.Errorf("%s /auth/logout touched the cookie", method)
			}
		}
		if resp := env.Get("/auth/me", cookie); resp.StatusCode != http.StatusOK {
			t.Errorf("session after GET /auth/logout: %d", resp.StatusCode)
		}
	})

	t.Run("JSON", func(t *testing.T) {
		cookie := env.Login(t, aliceEmail, alicePassword)
		other := env.Login(t, aliceEmail, alicePassword) // another browser
		resp := env.PostJSON("/auth/logout", nil, cookie)
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("status %d, want 204", resp.StatusCode)
		}
		if c := env.SessionCookie(resp); c == nil || c.MaxAge >= 0 {
			t.Errorf("cookie not expired: %v", c)
		}
		if _, err := env.Store.Session(t.Context(), storage.HashSecret(cookie.Value)); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("record after logout: %v, want ErrNotFound", err)
		}
		if code := env.ProblemCode(t, env.Get("/auth/me", cookie), http.StatusUnauthorized); code != "unauthenticated" {
			t.Errorf("old cookie: code %q", code)
		}
		if resp := env.Get("/auth/me", other); resp.StatusCode != http.StatusOK {
			t.Errorf("the other browser was signed out too: %d", resp.StatusCode)
		}
	})

	t.Run("form", func(t *testing.T) {
		cookie := env.Login(t, aliceEmail, alicePassword)
		resp := env.PostForm("/auth/logout", url.Values{}, cookie)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/auth/login" {
			t.Fatalf("status %d Location %q, want 303 to /auth/login", resp.StatusCode, resp.Header.Get("Location"))
		}
		if c := env.SessionCookie(resp); c == nil || c.MaxAge >= 0 {
			t.Errorf("cookie not expired: %v", c)
		}
		if resp := env.Get("/auth/me", cookie); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("old cookie: %d", resp.StatusCode)
		}
	})

	for name, cookie := range map[string]*http.Cookie{
		"without a session":  nil,
		"with an unknown id": {Name: env.Config.CookieName, Value: newSecret()},
	} {
		t.Run(name, func(t *testing.T) {
			resp := env.PostJSON("/auth/logout", nil, cookie)
			if resp.StatusCode != http.StatusNoContent {
				t.Errorf("status %d, want 204", resp.StatusCode)
			}
			if c := env.SessionCookie(resp); c == nil || c.MaxAge >= 0 {
				t.Errorf("cookie not expired: %v", c)
			}
		})
	}
}

// A logout whose deletion fails says so (the session may still work
// elsewhere) and still drops the cookie.
func TestLogoutStoreFailure(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.Store = faultyStore{Store: c.Store.(storage.Store), fail: failing("DeleteSession")} })
	alice := env.CreateUser(t, aliceEmail, alicePassword)
	cookie := env.StartSession(t, alice)
	resp := env.PostJSON("/auth/logout", nil, cookie)
	if code := env.ProblemCode(t, resp, http.StatusServiceUnavailable); code != "store_unavailable" {
		t.Errorf("code %q", code)
	}
	if c := env.SessionCookie(resp); c == nil || c.MaxAge >= 0 {
		t.Errorf("cookie not expired: %v", c)
	}
}

// SS7: the id counts only in the session cookie.
func TestSessionOnlyFromCookie(t *testing.T) {
	env := newTestEnv(t)
	env.CreateUser(t, aliceEmail, alicePassword)
	id := env.Login(t, aliceEmail, alicePassword).Value
	name := env.Config.CookieName
	tests := []struct {
		name   string
		modify func(*http.Request)
	}{
		{"query, cookie name", func(r *http.Request) { r.URL.RawQuery = name + "=" + id }},
		{"query, session", func(r *http.Request) { r.URL.RawQuery = "session=" + id + "&session_id=" + id + "&token=" + id }},
		{"Authorization Bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+id) }},
		{"Authorization bare", func(r *http.Request) { r.Header.Set("Authorization", id) }},
		{"X-Session", func(r *http.Request) { r.Header.Set("X-Session", id) }},
		{"X-Session-Id", func(r *http.Request) { r.Header.Set("X-Session-Id", id) }},
		{"X-Gatehouse-Session", func(r *http.Request) { r.Header.Set("X-Gatehouse-Session", id) }},
		{"another cookie name", func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "session", Value: id}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := env.NewRequest(http.MethodGet, "/auth/me", nil)
			tt.modify(r)
			resp := env.Do(r)
			if code := env.ProblemCode(t, resp, http.StatusUnauthorized); code != "unauthenticated" {
				t.Errorf("code %q", code)
			}
			if resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
	// Control: the cookie itself works.
	if resp := env.Get("/auth/me", &http.Cookie{Name: name, Value: id}); resp.StatusCode != http.StatusOK {
		t.Fatalf("cookie: %d", resp.StatusCode)
	}
}

func TestMe(t *testing.T) {
	env := newTestEnv(t)
	alice := env.CreateUser(t, aliceEmail, alicePassword)
	bob := storage.User{ID: randomUserID(), Email: "bob@example.com", CreatedAt: env.Clock.Now()}
	bobGitHub := storage.Identity{Provider: "github", Subject: "4242", Email: "bob@users.example", UserID: bob.ID, CreatedAt: env.Clock.Now()}
	if err := env.Store.CreateUserWithIdentity(t.Context(), bob, bobGitHub); err != nil {
		t.Fatal(err)
	}
	linkIdentity(t, env.Store, storage.Identity{Provider: "google", Subject: "g-1", Email: "bob@gmail.example", UserID: bob.ID, CreatedAt: env.Clock.Now()})

	tests := []struct {
		name   string
		cookie *http.Cookie
		want   string
	}{
		{"password user", env.Login(t, aliceEmail, alicePassword),
			`{"id":"` + alice.ID + `","email":"alice@example.com","has_password":true,"identities":[]}`},
		{"OAuth user", env.StartSession(t, bob), `{"id":"` + bob.ID + `","email":"bob@example.com","has_password":false,"identities":[` +
			`{"provider":"github","subject":"4242","email":"bob@users.example"},` +
			`{"provider":"google","subject":"g-1","email":"bob@gmail.example"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := env.Get("/auth/me", tt.cookie)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			var got, want any
			env.DecodeJSON(t, resp, &got)
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(got, want) {
				t.Errorf("got %s\nwant %s", env.Body(t, resp), tt.want)
			}
		})
	}
}

// Store failures fail closed: never a 200, never "not signed in" either.
func TestMeStoreFailure(t *testing.T) {
	for _, method := range []string{"Session", "UserByID", "IdentitiesOfUser"} {
		t.Run(method, func(t *testing.T) {
			env := newTestEnv(t, func(c *Config) { c.Store = faultyStore{Store: c.Store.(storage.Store), fail: failing(method)} })
			alice := env.CreateUser(t, aliceEmail, alicePassword)
			resp := env.Get("/auth/me", env.StartSession(t, alice))
			if code := env.ProblemCode(t, resp, http.StatusServiceUnavailable); code != "store_unavailable" {
				t.Errorf("code %q", code)
			}
		})
	}
}
