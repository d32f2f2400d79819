package authflows

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/authflows/provider"
	"github.com/gatehouse-auth/gatehouse/storage"
)

const (
	aliceEmail    = "alice@example.com"
	alicePassword = "correct horse battery staple"
)

func TestLoginPage(t *testing.T) {
	env := newTestEnv(t)
	tests := []struct {
		name, target string
		want, absent []string
	}{
		{"form", "/auth/login", []string{
			`<form method="post">`,
			`name="email"`, `name="password"`, `type="password"`,
			`<input type="hidden" name="rd" value="/">`,
			`href="/auth/forgot"`,
		}, []string{"Continue with", `class="notice"`, `class="error"`}},
		{"rd kept", "/auth/login?rd=" + url.QueryEscape("/app/page?x=1"), []string{
			`<input type="hidden" name="rd" value="/app/page?x=1">`,
		}, nil},
		{"foreign rd dropped", "/auth/login?rd=" + url.QueryEscape("//evil.example/x"), []string{
			`<input type="hidden" name="rd" value="/">`,
		}, []string{"evil.example"}},
		{"rd escaped", "/auth/login?rd=" + url.QueryEscape(`/a"><script>x</script>`), nil, []string{"<script>"}},
		{"after reset", "/auth/login?reset=1", []string{"Your password was changed, sign in."}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := env.Get(tt.target)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			body := env.Body(t, resp)
			for _, s := range tt.want {
				if !strings.Contains(body, s) {
					t.Errorf("page lacks %q:\n%s", s, body)
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(body, s) {
					t.Errorf("page contains %q:\n%s", s, body)
				}
			}
		})
	}
}

func TestLoginPageProviderButtons(t *testing.T) {
	env := newTestEnv(t, func(c *Config) {
		for _, name := range []string{"github", "google"} {
			c.Providers = append(c.Providers, provider.Config{
				Name: name, ClientID: "client-" + name, ClientSecret: "secret-" + name,
				RedirectURL: testBaseURL + "/auth/callback/" + name,
			})
		}
	})
	body := env.Body(t, env.Get("/auth/login?rd=/app"))
	for _, want := range []string{
		`href="/auth/login/google?rd=%2fapp"`, "Continue with Google",
		`href="/auth/login/github?rd=%2fapp"`, "Continue with GitHub",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q:\n%s", want, body)
		}
	}
}

func TestLoginJSON(t *testing.T) {
	env := newTestEnv(t)
	alice := env.CreateUser(t, aliceEmail, alicePassword)
	for _, email := range []string{aliceEmail, "  Alice@Example.COM "} {
		t.Run(email, func(t *testing.T) {
			resp := env.PostJSON("/auth/login", map[string]string{"email": email, "password": alicePassword})
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, env.Body(t, resp))
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var got map[string]map[string]any
			env.DecodeJSON(t, resp, &got)
			want := map[string]map[string]any{"user": {"id": alice.ID, "email": aliceEmail}}
			if !jsonEqual(got, want) {
				t.Errorf("body %v, want %v", got, want)
			}
			cookie := env.SessionCookie(resp)
			if cookie == nil {
				t.Fatal("no session cookie")
			}
			if me := env.Get("/auth/me", cookie); me.StatusCode != http.StatusOK {
				t.Errorf("/auth/me with the new cookie: %d", me.StatusCode)
			}
		})
	}
}

func TestLoginFormRedirects(t *testing.T) {
	env := newTestEnv(t)
	env.CreateUser(t, aliceEmail, alicePassword)
	tests := []struct{ rd, want string }{
		{"", "/"},
		{"/", "/"},
		{"/app/page?x=1&y=2", "/app/page?x=1&y=2"},
		{"//evil.example/x", "/"},
		{"/\\evil.example", "/"},
		{"https://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
	}
	for _, tt := range tests {
		t.Run(tt.rd, func(t *testing.T) {
			form := url.Values{"email": {aliceEmail}, "password": {alicePassword}}
			if tt.rd != "" {
				form.Set("rd", tt.rd)
			}
			resp := env.PostForm("/auth/login", form)
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("status %d, want 303: %s", resp.StatusCode, env.Body(t, resp))
			}
			if loc := resp.Header.Get("Location"); loc != tt.want {
				t.Errorf("Location %q, want %q", loc, tt.want)
			}
			if env.SessionCookie(resp) == nil {
				t.Error("no session cookie")
			}
		})
	}
}

// A browser whose sign-in fails gets the page again, with the status, a
// message, its email and its rd.
func TestLoginFormErrorPage(t *testing.T) {
	env := newTestEnv(t)
	env.CreateUser(t, aliceEmail, alicePassword)
	form := url.Values{"email": {aliceEmail}, "password": {"wrong password!"}, "rd": {"/app"}}
	resp := env.PostForm("/auth/login", form)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if env.SessionCookie(resp) != nil {
		t.Error("failed login set a session cookie")
	}
	body := env.Body(t, resp)
	for _, want := range []string{`class="error"`, "Wrong email or password", `value="alice@example.com"`, `name="rd" value="/app"`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "wrong password!") {
		t.Error("the page repeats the password")
	}
}

// JSON clients that prefer HTML by Accept get pages and redirects too.
func TestLoginAcceptHTML(t *testing.T) {
	env := newTestEnv(t)
	env.CreateUser(t, aliceEmail, alicePassword)
	r := env.JSONRequest(http.MethodPost, "/auth/login", map[string]string{"email": aliceEmail, "password": alicePassword, "rd": "/x"})
	r.Header.Set("Accept", "text/html")
	if resp := env.Do(r); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/x" {
		t.Errorf("status %d Location %q, want 303 to /x", resp.StatusCode, resp.Header.Get("Location"))
	}
	r = env.JSONRequest(http.MethodPost, "/auth/login", map[string]string{"email": aliceEmail, "password": "nope nope nope"})
	r.Header.Set("Accept", "text/html")
	resp := env.Do(r)
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("status %d Content-Type %q, want a 401 page", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

func TestLoginMissingFields(t *testing.T) {
	env := newTestEnv(t)
	for _, body := range []map[string]string{
		{},
		{"email": aliceEmail},
		{"password": alicePassword},
		{"email": "   ", "password": alicePassword},
	} {
		resp := env.PostJSON("/auth/login", body)
		if code := env.ProblemCode(t, resp, http.StatusBadRequest); code != "invalid_request" {
			t.Errorf("%v: code %q", body, code)
		}
	}
}

// PW4: one answer, and one argon2 run, for an unknown email, a wrong password
// and a password-less account.
func TestLoginFailuresLookAlike(t *testing.T) {
	env := newTestEnv(t, hashLimits(password.Limits{Wait: time.Millisecond}))
	env.CreateUser(t, aliceEmail, alicePassword)
	env.CreateUser(t, "oauth-only@example.com", "")
	attempts := []struct{ name, email, password string }{
		{"unknown email", "nobody@example.com", alicePassword},
		{"wrong password", aliceEmail, "not the password at all"},
		{"password-less account", "oauth-only@example.com", alicePassword},
	}
	type answer struct {
		status int
		header http.Header
		body   string
	}
	capture := func(resp *http.Response, email string) answer {
		h := resp.Header.Clone()
		h.Del("Date")
		// A page echoes the email typed; that is the caller's own input.
		return answer{resp.StatusCode, h, strings.ReplaceAll(env.Body(t, resp), email, "EMAIL")}
	}
	for _, kind := range []string{"json", "form"} {
		t.Run(kind, func(t *testing.T) {
			var first answer
			for i, a := range attempts {
				before := env.HashRuns()
				var resp *http.Response
				if kind == "json" {
					resp = env.PostJSON("/auth/login", map[string]string{"email": a.email, "password": a.password})
				} else {
					resp = env.PostForm("/auth/login", url.Values{"email": {a.email}, "password": {a.password}})
				}
				if runs := env.HashRuns() - before; runs != 1 {
					t.Errorf("%s: %d argon2 runs, want exactly 1", a.name, runs)
				}
				got := capture(resp, a.email)
				if got.status != http.StatusUnauthorized {
					t.Errorf("%s: status %d, want 401", a.name, got.status)
				}
				if kind == "json" && !strings.Contains(got.body, `"code":"invalid_credentials"`) {
					t.Errorf("%s: body %s", a.name, got.body)
				}
				if i == 0 {
					first = got
					continue
				}
				if got.status != first.status || !jsonEqual(got.header, first.header) || got.body != first.body {
					t.Errorf("%s answers differently from %s:\n%d %v\n%s\nvs\n%d %v\n%s",
						a.name, attempts[0].name, got.status, got.header, got.body, first.status, first.header, first.body)
				}
			}
		})
	}

	// With every hashing slot taken, each path waits for one: none skips
	// the verification.
	env.FillHashSlots(t)
	for _, a := range attempts {
		resp := env.PostJSON("/auth/login", map[string]string{"email": a.email, "password": a.password})
		if code := env.ProblemCode(t, resp, http.StatusServiceUnavailable); code != "busy" {
			t.Errorf("%s with full hasher: code %q, want busy", a.name, code)
		}
	}
}

// PW5: when every hashing slot is taken, a sign-in is answered 503 busy after
// the hasher's wait instead of queueing without bound.
func TestLoginBusy(t *testing.T) {
	env := newTestEnv(t, hashLimits(password.Limits{Wait: 5 * time.Millisecond}))
	env.CreateUser(t, aliceEmail, alicePassword)
	release := env.FillHashSlots(t)

	resp := env.PostJSON("/auth/login", map[string]string{"email": aliceEmail, "password": alicePassword})
	if code := env.ProblemCode(t, resp, http.StatusServiceUnavailable); code != "busy" {
		t.Errorf("code %q, want busy", code)
	}
	if env.SessionCookie(resp) != nil {
		t.Error("busy answer set a session cookie")
	}
	page := env.PostForm("/auth/login", url.Values{"email": {aliceEmail}, "password": {alicePassword}})
	if page.StatusCode != http.StatusServiceUnavailable || !strings.Contains(env.Body(t, page), "Too many sign-ins at once") {
		t.Errorf("form: status %d, want 503 page with the reason", page.StatusCode)
	}
	if got := env.CounterValue(t, "gatehouse_logins_total", map[string]string{"result": "busy"}); got != 2 {
		t.Errorf("busy logins counted %v, want 2", got)
	}
	// Busy is not a failure of the account.
	for range 12 {
		env.PostJSON("/auth/login", map[string]string{"email": aliceEmail, "password": "wrong"})
	}
	release()
	env.Login(t, aliceEmail, alicePassword)
}

// PW2, DS2: passwords are compared whole, after NFKC; one over the limit is
// refused before hashing, with the usual answer.
func TestLoginPasswordLength(t *testing.T) {
	env := newTestEnv(t, hashLimits(password.Limits{Wait: time.Millisecond}))
	long := strings.Repeat("a", 199) + "b"
	env.CreateUser(t, "long@example.com", long)
	longest := strings.Repeat("ｗ", password.MaxLength) // 1024 code points, 3072 bytes
	env.CreateUser(t, "max@example.com", longest)
	env.CreateUser(t, "wide@example.com", "ｐａｓｓｐｈｒａｓｅ ｗｉｄｅ")

	tests := []struct {
		name, email, password string
		status                int
		runs                  int64
	}{
		{"200 characters", "long@example.com", long, http.StatusOK, 1},
		{"last character differs", "long@example.com", strings.Repeat("a", 199) + "c", http.StatusUnauthorized, 1},
		{"prefix only", "long@example.com", strings.Repeat("a", 199), http.StatusUnauthorized, 1},
		{"1024 code points", "max@example.com", longest, http.StatusOK, 1},
		{"1025 code points", "max@example.com", longest + "ｗ", http.StatusUnauthorized, 0},
		{"1025 unknown account", "nobody@example.com", strings.Repeat("x", password.MaxLength+1), http.StatusUnauthorized, 0},
		{"NFKC equivalent", "wide@example.com", "passphrase wide", http.StatusOK, 1},
		{"as stored", "wide@example.com", "ｐａｓｓｐｈｒａｓｅ ｗｉｄｅ", http.StatusOK, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := env.HashRuns()
			resp := env.PostJSON("/auth/login", map[string]string{"email": tt.email, "password": tt.password})
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, env.Body(t, resp))
			}
			if tt.status == http.StatusUnauthorized {
				if code := env.ProblemCode(t, resp, tt.status); code != "invalid_credentials" {
					t.Errorf("code %q", code)
				}
			}
			if runs := env.HashRuns() - before; runs != tt.runs {
				t.Errorf("%d argon2 runs, want %d", runs, tt.runs)
			}
		})
	}

	// Even with the hasher full, an oversized password is refused, not queued.
	env.FillHashSlots(t)
	resp := env.PostJSON("/auth/login", map[string]string{"email": "max@example.com", "password": longest + "ｗ"})
	if code := env.ProblemCode(t, resp, http.StatusUnauthorized); code != "invalid_credentials" {
		t.Errorf("oversized password with full hasher: %q", code)
	}
}

// PW1: a hash made with weaker parameters is replaced at the next sign-in.
func TestLoginUpgradesWeakHash(t *testing.T) {
	env := newTestEnv(t)
	weak := password.HashParams{Memory: 32, Time: 1, Threads: 1}
	oldHash, err := password.NewHasher(weak).Hash(t.Context(), alicePassword)
	if err != nil {
		t.Fatal(err)
	}
	u := storage.User{ID: randomUserID(), Email: aliceEmail, PasswordHash: oldHash}
	if err := env.Store.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	stored := func() string {
		t.Helper()
		got, err := env.Store.UserByID(t.Context(), u.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.PasswordHash
	}

	// A wrong password changes nothing.
	env.PostJSON("/auth/login", map[string]string{"email": aliceEmail, "password": "wrong password"})
	if stored() != oldHash {
		t.Fatal("a failed login changed the hash")
	}

	env.Login(t, aliceEmail, alicePassword)
	upgraded := stored()
	if upgraded == oldHash {
		t.Fatal("hash not upgraded")
	}
	if want := "$argon2id$v=19$m=64,t=1,p=1$"; !strings.HasPrefix(upgraded, want) {
		t.Errorf("upgraded hash %q, want prefix %q", upgraded, want)
	}
	env.Login(t, aliceEmail, alicePassword)
	if stored() != upgraded {
		t.Error("a current hash was replaced again")
	}
}

// A hash stronger than the current parameters is kept: upgrades never go down.
func TestLoginKeepsStrongerHash(t *testing.T) {
	env := newTestEnv(t)
	strong := password.HashParams{Memory: testHashParams.Memory * 2, Time: testHashParams.Time + 1, Threads: 1}
	strongHash, err := password.NewHasher(strong).Hash(t.Context(), alicePassword)
	if err != nil {
		t.Fatal(err)
	}
	u := storage.User{ID: randomUserID(), Email: aliceEmail, PasswordHash: strongHash}
	if err := env.Store.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	env.Login(t, aliceEmail, alicePassword)
	got, err := env.Store.UserByID(t.Context(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.PasswordHash != strongHash {
		t.Errorf("a stronger hash was rewritten with weaker parameters: %.40s…", got.PasswordHash)
	}
}

// A failed upgrade does not stop the sign-in.
func TestLoginUpgradeFailureStillSignsIn(t *testing.T) {
	env := newTestEnv(t, func(c *Config) {
		c.Store = faultyStore{Store: c.Store.(storage.Store), fail: failing("UpgradePasswordHash")}
	})
	oldHash, _ := password.NewHasher(password.HashParams{Memory: 32, Time: 1, Threads: 1}).Hash(t.Context(), alicePassword)
	u := storage.User{ID: randomUserID(), Email: aliceEmail, PasswordHash: oldHash}
	if err := env.Store.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	env.Login(t, aliceEmail, alicePassword)
	if got, _ := env.Store.UserByID(t.Context(), u.ID); got.PasswordHash != oldHash {
		t.Error("the hash was upgraded: the failing upgrade was never tried")
	}
}

// Store failures fail closed: 503, never a session.
func TestLoginStoreFailure(t *testing.T) {
	for _, method := range []string{"UserByEmail", "CreateSession"} {
		t.Run(method, func(t *testing.T) {
			env := newTestEnv(t, func(c *Config) { c.Store = faultyStore{Store: c.Store.(storage.Store), fail: failing(method)} })
			env.CreateUser(t, aliceEmail, alicePassword)
			resp := env.PostJSON("/auth/login", map[string]string{"email": aliceEmail, "password": alicePassword})
			if code := env.ProblemCode(t, resp, http.StatusServiceUnavailable); code != "store_unavailable" {
				t.Errorf("code %q", code)
			}
			if env.SessionCookie(resp) != nil {
				t.Error("session cookie set although the store failed")
			}
			if !strings.Contains(env.Logs.String(), errFaultyStore.Error()) {
				t.Error("store error not logged")
			}
		})
	}
}

// LG2: one event line per outcome, with the user id on success; metrics
// count each result.
func TestLoginEventsAndMetrics(t *testing.T) {
	env := newTestEnv(t)
	alice := env.CreateUser(t, aliceEmail, alicePassword)
	cookie := env.Login(t, aliceEmail, alicePassword)
	env.PostJSON("/auth/login", map[string]string{"email": aliceEmail, "password": "wrong password"})
	env.PostJSON("/auth/logout", nil, cookie)

	ok := env.Logs.Events("login_ok")
	if len(ok) != 1 || !strings.Contains(ok[0], "user_id="+alice.ID) || !strings.Contains(ok[0], "client_ip="+testClientIP) {
		t.Errorf("login_ok events: %q", ok)
	}
	failed := env.Logs.Events("login_failed")
	if len(failed) != 1 || !strings.Contains(failed[0], "email="+aliceEmail) {
		t.Errorf("login_failed events: %q", failed)
	}
	if out := env.Logs.Events("logout"); len(out) != 1 || !strings.Contains(out[0], "user_id="+alice.ID) {
		t.Errorf("logout events: %q", out)
	}
	for result, want := range map[string]float64{"ok": 1, "failed": 1, "throttled": 0} {
		if got := env.CounterValue(t, "gatehouse_logins_total", map[string]string{"result": result}); got != want {
			t.Errorf("logins{result=%q} = %v, want %v", result, got, want)
		}
	}
}

// LG1: neither the password nor the session id of a sign-in reaches a log
// line, whatever the outcome.
func TestLoginLogsNoSecrets(t *testing.T) {
	env := newTestEnv(t)
	const canary = "Canary-Password-7f3a9c1e-do-not-log"
	const wrongCanary = "Canary-Wrong-Password-52be0d-do-not-log"
	env.CreateUser(t, aliceEmail, canary)

	var secrets []string
	cookie := env.Login(t, aliceEmail, canary)
	secrets = append(secrets, cookie.Value)
	resp := env.PostForm("/auth/login", url.Values{"email": {aliceEmail}, "password": {canary}, "rd": {"/app"}})
	if c := env.SessionCookie(resp); c != nil {
		secrets = append(secrets, c.Value)
	}
	env.PostJSON("/auth/login", map[string]string{"email": aliceEmail, "password": wrongCanary})
	env.PostForm("/auth/login", url.Values{"email": {"nobody@example.com"}, "password": {wrongCanary}})
	env.PostJSON("/auth/login", map[string]string{"email": aliceEmail, "password": wrongCanary + strings.Repeat("x", password.MaxLength)})
	env.Get("/auth/me", cookie)
	env.PostJSON("/auth/logout", nil, cookie)
	env.Get("/auth/me", cookie) // a revoked id

	logs := env.Logs.String()
	if !strings.Contains(logs, "login_ok") || !strings.Contains(logs, "login_failed") {
		t.Fatalf("expected events missing from the logs:\n%s", logs)
	}
	for _, s := range append(secrets, canary, wrongCanary) {
		if strings.Contains(logs, s) {
			t.Errorf("log contains secret %q:\n%s", s, logs)
		}
	}
}

// LG3: an email with CR/LF cannot start a log line of its own, in either
// log format: it is not an address, so none of it is written (LG1).
func TestLoginLogsNoForgedLines(t *testing.T) {
	forged := "mallory@example.com\r\ntime=2026-03-01T12:00:00.000Z level=INFO msg=\"auth event\" event=login_ok user_id=admin\n"
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			logs := &logBuffer{}
			env := newTestEnv(t, func(c *Config) {
				if format == "json" {
					c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
				} else {
					c.Logger = slog.New(slog.NewTextHandler(logs, nil))
				}
			})
			for _, resp := range []*http.Response{
				env.PostJSON("/auth/login", map[string]string{"email": forged, "password": "wrong password"}),
				env.PostForm("/auth/login", url.Values{"email": {forged}, "password": {"wrong password"}}),
			} {
				if resp.StatusCode != http.StatusUnauthorized {
					t.Fatalf("status %d", resp.StatusCode)
				}
			}
			lines := logs.Lines()
			if len(lines) != 2 {
				t.Fatalf("two failed logins wrote %d lines, want 2:\n%s", len(lines), logs.String())
			}
			for _, line := range lines {
				if format == "json" {
					var rec map[string]any
					if err := json.Unmarshal([]byte(line), &rec); err != nil {
						t.Errorf("not one JSON record: %q", line)
					}
					if rec["event"] != "login_failed" || rec["email"] != notAnAddress {
						t.Errorf("record %v", rec)
					}
				} else if !strings.Contains(line, "event=login_failed") || !strings.Contains(line, `email="(not an address)"`) || strings.Contains(line, "mallory") {
					t.Errorf("line %q", line)
				}
			}
		})
	}
}

// jsonEqual compares two values by their JSON encoding.
func jsonEqual(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// PW5 at the endpoint: with one hashing slot, sign-ins one after another
// never rest and never wait (a taken slot would be 503 busy at once here);
// two at once both get in, the second after the first one's rest.
func TestLoginHashingSlotHandOff(t *testing.T) {
	var rests atomic.Int32
	env := newTestEnv(t, hashLimits(password.Limits{Slots: 1, Wait: time.Hour,
		Rest: func(d time.Duration, release func()) { rests.Add(1); release() }}))
	env.CreateUser(t, aliceEmail, alicePassword)
	h := env.Hasher

	for i := range 5 {
		if resp := env.PostJSON("/auth/login", map[string]string{"email": aliceEmail, "password": alicePassword}); resp.StatusCode != http.StatusOK {
			t.Fatalf("lone sign-in %d: status %d", i+1, resp.StatusCode)
		}
	}
	if n := rests.Load(); n != 0 {
		t.Fatalf("%d rests for lone sign-ins, want 0", n)
	}

	release, err := h.Hold(t.Context()) // a sign-in in progress
	if err != nil {
		t.Fatal(err)
	}
	statuses := make(chan int, 2)
	for range 2 {
		r := env.JSONRequest(http.MethodPost, "/auth/login", map[string]string{"email": aliceEmail, "password": alicePassword})
		go func() { statuses <- env.Do(r).StatusCode }()
	}
	for h.Waiting() != 2 {
		runtime.Gosched()
	}
	release()
	for range 2 {
		if s := receive(t, statuses, "a contended sign-in's answer"); s != http.StatusOK {
			t.Errorf("contended sign-in: status %d", s)
		}
	}
	if n := rests.Load(); n != 1 {
		t.Errorf("%d rests, want 1 (the first of two contended sign-ins)", n)
	}
}

// LG2: the event lines of sign-in, reset request, reset and throttling are
// structured, each with the time, the client IP and the request id that the
// proxy set (X-Request-Id), and the user id wherever the account is known;
// the reset says how many sessions it revoked.
func TestEventLinesCarryContext(t *testing.T) {
	logs := &logBuffer{}
	e := newMailEnv(t, mailEnvConfig{options: []func(*Config){func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	}}})
	alice := e.CreateUser(t, aliceEmail, alicePassword)
	send := func(r *http.Request, id string) *http.Response {
		r.Header.Set("X-Request-Id", id)
		return e.Do(r)
	}
	login := func(password, id string) *http.Response {
		return send(e.JSONRequest(http.MethodPost, "/auth/login", map[string]string{"email": aliceEmail, "password": password}), id)
	}
	forgot := func(id string) {
		send(e.JSONRequest(http.MethodPost, "/auth/forgot", map[string]string{"email": aliceEmail}), id)
	}

	login(alicePassword, "req-login-ok")
	for i := range 10 {
		login("wrong password", fmt.Sprint("req-login-failed-", i))
	}
	login("wrong password", "req-login-throttled")
	for _, id := range []string{"req-forgot", "req-forgot-2", "req-forgot-3"} {
		forgot(id)
		e.nextMail(t)
	}
	forgot("req-forgot-throttled")
	send(e.JSONRequest(http.MethodPost, "/auth/reset", map[string]string{"token": "bogus", "password": freshPassword}), "req-reset-failed")
	token := e.IssueResetToken(t, alice)
	send(e.JSONRequest(http.MethodPost, "/auth/reset", map[string]string{"token": token, "password": freshPassword}), "req-reset")

	records := map[string]map[string]any{} // request id → event record
	for _, line := range logs.Lines() {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON record: %q", line)
		}
		if id, ok := rec["request_id"].(string); ok && rec["event"] != nil {
			records[id] = rec
		}
	}
	for _, tt := range []struct {
		requestID, event string
		withUser         bool
		more             map[string]any
	}{
		{"req-login-ok", "login_ok", true, nil},
		{"req-login-failed-0", "login_failed", true, map[string]any{"email": aliceEmail}},
		{"req-login-throttled", "login_throttled", false, map[string]any{"scope": "account"}},
		{"req-forgot", "forgot_requested", true, map[string]any{"known": true}},
		{"req-forgot-throttled", "forgot_throttled", false, map[string]any{"scope": "account"}},
		{"req-reset-failed", "reset_failed", false, map[string]any{"reason": "invalid_token"}},
		{"req-reset", "reset_completed", true, map[string]any{"sessions_revoked": float64(1)}},
	} {
		rec, ok := records[tt.requestID]
		if !ok {
			t.Errorf("%s: no event line with request_id %s:\n%s", tt.event, tt.requestID, logs.String())
			continue
		}
		if rec["event"] != tt.event || rec["client_ip"] != testClientIP {
			t.Errorf("%s: %v", tt.event, rec)
		}
		if ts, _ := rec["time"].(string); ts == "" {
			t.Errorf("%s: no time: %v", tt.event, rec)
		}
		if tt.withUser && rec["user_id"] != alice.ID {
			t.Errorf("%s: user_id %v, want %s", tt.event, rec["user_id"], alice.ID)
		}
		for k, v := range tt.more {
			if rec[k] != v {
				t.Errorf("%s: %s=%v, want %v", tt.event, k, rec[k], v)
			}
		}
	}
}

// PW1: "a stored hash with weaker parameters is upgraded at the next
// sign-in"; README: "stronger ones are kept"; the brief of the upgrade is
// that it never goes down. A hash with four times the memory and one pass
// fewer (twice the total work, and OWASP's own m=47104,t=1 versus
// m=19456,t=2 trade) is not rewritten at the next sign-in with a quarter of
// the memory, which would make the stored hash cheaper to crack on GPUs.
func TestLoginUpgradeNeverLowersMemoryCost(t *testing.T) {
	current := password.HashParams{Memory: 64, Time: 2, Threads: 1}
	e := newTestEnv(t, func(c *Config) { c.Hash = current })
	memoryHard := password.HashParams{Memory: 4 * current.Memory, Time: current.Time - 1, Threads: 1} // 256 KiB × 1 = 2× the work of 64 KiB × 2
	stored, err := password.NewHasher(memoryHard).Hash(t.Context(), alicePassword)
	if err != nil {
		t.Fatal(err)
	}
	u := storage.User{ID: randomUserID(), Email: aliceEmail, PasswordHash: stored}
	if err := e.Store.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	e.Login(t, aliceEmail, alicePassword)
	got, err := e.Store.UserByID(t.Context(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	var p password.HashParams
	if _, err := fmt.Sscanf(strings.Split(got.PasswordHash, "$")[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil {
		t.Fatalf("stored hash %q: %v", got.PasswordHash, err)
	}
	if p.Memory < memoryHard.Memory || uint64(p.Memory)*uint64(p.Time) < uint64(memoryHard.Memory)*uint64(memoryHard.Time) {
		t.Errorf("sign-in rewrote m=%d,t=%d (work %d) as m=%d,t=%d (work %d): the upgrade lowered the hash's cost",
			memoryHard.Memory, memoryHard.Time, memoryHard.Memory*memoryHard.Time, p.Memory, p.Time, p.Memory*p.Time)
	}
}
