package authflows

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
)

// oauthEnv is Gatehouse's /auth/ handler on a real HTTP server with a bbolt
// store, a fake clock and captured logs, plus a fake Google and GitHub.
type oauthEnv struct {
	t        *testing.T
	store    *bolt.Store
	dbPath   string
	clock    *oauthClock
	logs     *lockedBuffer
	registry *prometheus.Registry
	handler  *Handler
	base     string // Gatehouse's base URL
	google   *oauthtest.Google
	github   *oauthtest.GitHub
}

type oauthEnvOptions struct {
	mode      web.Mode // default redirect
	providers []string // configured providers; default both
}

const (
	oauthCookieName = "gatehouse_session"
	googleClientID  = "google-client-id.apps.example"
	githubClientID  = "Iv1.githubclientid"
)

func newOAuthEnv(t *testing.T, opts oauthEnvOptions) *oauthEnv {
	t.Helper()
	if opts.mode == "" {
		opts.mode = web.ModeRedirect
	}
	if opts.providers == nil {
		opts.providers = []string{"google", "github"}
	}
	e := &oauthEnv{
		t:        t,
		dbPath:   filepath.Join(t.TempDir(), "gatehouse.db"),
		clock:    &oauthClock{now: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)},
		logs:     &lockedBuffer{},
		registry: prometheus.NewRegistry(),
	}
	var err error
	if e.store, err = bolt.Open(e.dbPath, bolt.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.store.Close() })

	// The server's address is needed for the redirect URLs before the
	// handler exists, so it is started late.
	srv := httptest.NewUnstartedServer(nil)
	e.base = "http://" + srv.Listener.Addr().String()
	base, _ := url.Parse(e.base)

	e.google = oauthtest.NewGoogle(oauthtest.Client{ID: googleClientID, Secret: "google-secret", RedirectURL: e.base + "/auth/callback/google"}, e.clock.Now)
	t.Cleanup(e.google.Close)
	e.github = oauthtest.NewGitHub(oauthtest.Client{ID: githubClientID, Secret: "github-secret", RedirectURL: e.base + "/auth/callback/github"}, e.clock.Now)
	t.Cleanup(e.github.Close)

	var providers []ProviderConfig
	for _, name := range opts.providers {
		switch name {
		case "google":
			providers = append(providers, ProviderConfig{
				Name: "google", ClientID: googleClientID, ClientSecret: "google-secret",
				RedirectURL: e.base + "/auth/callback/google",
				AuthURL:     e.google.AuthURL(), TokenURL: e.google.TokenURL(),
				UserinfoURL: e.google.UserinfoURL(), Issuer: e.google.Issuer(),
			})
		case "github":
			providers = append(providers, ProviderConfig{
				Name: "github", ClientID: githubClientID, ClientSecret: "github-secret",
				RedirectURL: e.base + "/auth/callback/github",
				AuthURL:     e.github.AuthURL(), TokenURL: e.github.TokenURL(), APIURL: e.github.APIURL(),
			})
		}
	}
	e.handler, err = New(Config{
		BaseURL:           base,
		CookieName:        oauthCookieName,
		SessionTTL:        168 * time.Hour,
		SessionIdleTTL:    24 * time.Hour,
		ResetTokenTTL:     30 * time.Minute,
		PasswordMinLength: 12,
		Hash:              HashParams{Memory: 64, Time: 1, Threads: 1},
		Providers:         providers,
		MailFrom:          "gatehouse@example.test",
		Store:             e.store,
		Denier:            web.Denier{Mode: opts.mode, BaseURL: base},
		Clock:             e.clock.Now,
		Logger:            slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Registerer:        e.registry,
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/auth/", e.handler)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "app") })
	srv.Config.Handler = mux
	srv.Start()
	t.Cleanup(srv.Close)
	return e
}

// oauthClock is a settable clock.
type oauthClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *oauthClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *oauthClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// lockedBuffer collects log output from concurrent handlers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// events returns the event names logged so far, in order.
func (e *oauthEnv) events() []string {
	var names []string
	for line := range strings.SplitSeq(e.logs.String(), "\n") {
		var rec struct{ Event string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Event != "" {
			names = append(names, rec.Event)
		}
	}
	return names
}

// newUser stores a user; with a password it has a (never verified) hash.
func (e *oauthEnv) newUser(email string, withPassword bool) storage.User {
	e.t.Helper()
	u := storage.User{ID: newUserID(), Email: storage.NormalizeEmail(email), CreatedAt: e.clock.Now()}
	if withPassword {
		u.PasswordHash = "$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g"
	}
	if err := e.store.CreateUser(e.t.Context(), u); err != nil {
		e.t.Fatal(err)
	}
	return u
}

// identities returns the user's linked identities.
func (e *oauthEnv) identities(userID string) []storage.Identity {
	e.t.Helper()
	ids, err := e.store.IdentitiesOfUser(e.t.Context(), userID)
	if err != nil {
		e.t.Fatal(err)
	}
	return ids
}

// browser is a user agent with a cookie jar that does not follow redirects,
// so each step of a flow can be inspected.
type browser struct {
	t      *testing.T
	env    *oauthEnv
	jar    *cookiejar.Jar
	client *http.Client
	accept string // Accept header; "" sends none (API client)
}

func (e *oauthEnv) newBrowser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: e.t, env: e, jar: jar, client: &http.Client{
		Jar:           jar,
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// answer is a response with its body read.
type answer struct {
	status  int
	header  http.Header
	body    string
	cookies []*http.Cookie
}

func (a answer) location() string { return a.header.Get("Location") }

// problemCode is the code member of a problem+json body.
func (a answer) problemCode() string {
	var p web.Problem
	_ = json.Unmarshal([]byte(a.body), &p)
	return p.Code
}

// cookie returns the Set-Cookie of name, if any.
func (a answer) cookie(name string) (*http.Cookie, bool) {
	for _, c := range a.cookies {
		if c.Name == name {
			return c, true
		}
	}
	return nil, false
}

func (b *browser) do(method, target string) answer {
	b.t.Helper()
	if strings.HasPrefix(target, "/") {
		target = b.env.base + target
	}
	req, err := http.NewRequest(method, target, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	if b.accept != "" {
		req.Header.Set("Accept", b.accept)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(body), cookies: resp.Cookies()}
}

func (b *browser) get(target string) answer { return b.do(http.MethodGet, target) }

// postForm posts an HTML form (as the account page does).
func (b *browser) postForm(path string) answer {
	b.t.Helper()
	resp, err := b.client.PostForm(b.env.base+path, url.Values{})
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(body), cookies: resp.Cookies()}
}

// signIn gives the browser a fresh session of u, as a password login would,
// and returns the session id.
func (b *browser) signIn(u storage.User) string {
	b.t.Helper()
	id := newSecret()
	now := b.env.clock.Now()
	err := b.env.store.CreateSession(b.t.Context(), storage.Session{
		IDHash: storage.HashSecret(id), UserID: u.ID, Email: u.Email,
		CreatedAt: now, ExpiresAt: now.Add(168 * time.Hour), LastSeen: now,
	})
	if err != nil {
		b.t.Fatal(err)
	}
	base, _ := url.Parse(b.env.base)
	b.jar.SetCookies(base, []*http.Cookie{{Name: oauthCookieName, Value: id, Path: "/"}})
	return id
}

// sessionID is the session cookie the browser holds, "" if none.
func (b *browser) sessionID() string {
	base, _ := url.Parse(b.env.base)
	for _, c := range b.jar.Cookies(base) {
		if c.Name == oauthCookieName {
			return c.Value
		}
	}
	return ""
}

// authorize starts a flow at start (e.g. /auth/login/google?rd=/x), lets the
// fake provider authorize it, and returns the callback URL the provider
// sends the browser to, without opening it.
func (b *browser) authorize(start string) string {
	b.t.Helper()
	a := b.get(start)
	if a.status != http.StatusFound {
		b.t.Fatalf("GET %s: %d %s, want 302 to the provider", start, a.status, a.body)
	}
	p := b.get(a.location())
	if p.status != http.StatusFound {
		b.t.Fatalf("provider authorize: %d %s", p.status, p.body)
	}
	return p.location()
}

// flow runs start through the provider and opens the callback.
func (b *browser) flow(start string) answer {
	b.t.Helper()
	return b.get(b.authorize(start))
}

// me is GET /auth/me decoded; ok is false for any status but 200.
func (b *browser) me() (meAnswer, bool) {
	b.t.Helper()
	a := b.get("/auth/me")
	if a.status != http.StatusOK {
		return meAnswer{}, false
	}
	var m meAnswer
	if err := json.Unmarshal([]byte(a.body), &m); err != nil {
		b.t.Fatalf("/auth/me: %v in %s", err, a.body)
	}
	return m, true
}

// stateOf returns the state parameter of a provider or callback URL.
func stateOf(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Query().Get("state")
}
