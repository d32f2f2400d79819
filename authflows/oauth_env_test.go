package authflows

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/authflows/provider"
	"github.com/gatehouse-auth/gatehouse/proxy"
	"github.com/gatehouse-auth/gatehouse/proxy/policy"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
)

// oauthEnv is the shared test environment (newTestEnv: bbolt store, fake
// clock, captured logs) with its Handler on a real HTTP server, a fake Google
// and a fake GitHub configured as providers.
type oauthEnv struct {
	*testEnv
	t      *testing.T
	dbPath string // the bbolt file, to look inside
	base   string // Gatehouse's base URL: the HTTP server
	google *oauthtest.Google
	github *oauthtest.GitHub
	// upstream records what reached the app behind the proxy, when the
	// env was built with throughProxy.
	upstream *upstreamRecorder
}

// upstreamRecorder is a stand-in app that records every request it gets.
type upstreamRecorder struct {
	mu       sync.Mutex
	requests []*http.Request // clones, bodies not kept
}

func (u *upstreamRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	u.requests = append(u.requests, r.Clone(context.Background()))
	u.mu.Unlock()
	_, _ = io.WriteString(w, "app")
}

// Requests returns every request the app got so far.
func (u *upstreamRecorder) Requests() []*http.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.requests)
}

type oauthEnvOptions struct {
	mode      web.Mode // default redirect
	providers []string // configured providers; default both
	// googleDefaultIssuer leaves provider.Config.Issuer empty (Google's
	// own issuer); otherwise it is the fake's URL.
	googleDefaultIssuer bool
	// throughProxy serves the Handler behind the real session gate
	// (proxy.New) in front of a recording app, as cmd/gatehouse wires it;
	// otherwise a plain mux sends /auth/ to the Handler.
	throughProxy bool
	// closedSignup keeps v2's default (no --open-signup); otherwise the
	// env opens sign-up, as the v1 tests of account creation expect.
	closedSignup bool
	// policy is the access policy of the Handler and of the gate.
	policy *policy.Policy
	// oidc, when set, configures the generic OIDC provider too, given
	// Gatehouse's base URL.
	oidc func(base string) provider.Config
	// configure, when set, edits each provider's configuration.
	configure func(c *provider.Config)
	// wrapStore, when set, wraps the Handler's store (e.g. to interleave
	// another change); the env's Store stays the bbolt store underneath.
	wrapStore func(storage.Store) storage.Store
	// secondFactor is --second-factor (default optional).
	secondFactor SecondFactorPolicy
	// edit, when set, changes the Handler's Config last (e.g. a token key).
	edit func(c *Config)
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
	// The server's address is needed for the redirect URLs before the
	// handler exists, so it is started late.
	srv := httptest.NewUnstartedServer(nil)
	e := &oauthEnv{t: t, base: "http://" + srv.Listener.Addr().String()}
	base, _ := url.Parse(e.base)
	clock := webtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))

	e.google = oauthtest.NewGoogle(oauthtest.Client{ID: googleClientID, Secret: "google-secret", RedirectURL: e.base + "/auth/callback/google"}, clock.Now)
	t.Cleanup(e.google.Close)
	issuer := e.google.Issuer()
	if opts.googleDefaultIssuer {
		issuer = ""
	}
	e.github = oauthtest.NewGitHub(oauthtest.Client{ID: githubClientID, Secret: "github-secret", RedirectURL: e.base + "/auth/callback/github"}, clock.Now)
	t.Cleanup(e.github.Close)

	var providers []provider.Config
	for _, name := range opts.providers {
		switch name {
		case "google":
			providers = append(providers, provider.Config{
				Name: "google", ClientID: googleClientID, ClientSecret: "google-secret",
				RedirectURL: e.base + "/auth/callback/google",
				AuthURL:     e.google.AuthURL(), TokenURL: e.google.TokenURL(),
				UserinfoURL: e.google.UserinfoURL(), JWKSURL: e.google.JWKSURL(), Issuer: issuer,
			})
		case "github":
			providers = append(providers, provider.Config{
				Name: "github", ClientID: githubClientID, ClientSecret: "github-secret",
				RedirectURL: e.base + "/auth/callback/github",
				AuthURL:     e.github.AuthURL(), TokenURL: e.github.TokenURL(), APIURL: e.github.APIURL(),
			})
		}
	}
	if opts.oidc != nil {
		providers = append(providers, opts.oidc(e.base))
	}
	if opts.configure != nil {
		for i := range providers {
			opts.configure(&providers[i])
		}
	}
	e.dbPath = filepath.Join(t.TempDir(), "oauth.db")
	store, err := bolt.Open(e.dbPath, bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	e.testEnv = newTestEnv(t, func(c *Config) {
		c.Store = store
		c.SecondFactor = opts.secondFactor
		if opts.wrapStore != nil {
			c.Store = opts.wrapStore(store)
		}
		c.BaseURL = base
		c.Denier = web.Denier{Mode: opts.mode, BaseURL: base}
		c.Clock = clock.Now
		c.Providers = providers
		c.OpenSignup = !opts.closedSignup
		c.Policy = opts.policy
		if opts.edit != nil {
			opts.edit(c)
		}
	})
	e.Store, e.Clock = store, clock
	if opts.throughProxy {
		e.upstream = &upstreamRecorder{}
		app := httptest.NewServer(e.upstream)
		t.Cleanup(app.Close)
		appURL, _ := url.Parse(app.URL)
		gateConfig := proxy.Config{
			Upstream: appURL, Auth: e.Handler, Sessions: store, CookieName: oauthCookieName,
			Denier: web.Denier{Mode: opts.mode, BaseURL: base}, IdleTTL: e.Config.SessionIdleTTL,
			Clock: clock.Now, Logger: e.Config.Logger,
		}
		if opts.policy != nil {
			gateConfig.Policy = opts.policy
		}
		gate, err := proxy.New(gateConfig)
		if err != nil {
			t.Fatal(err)
		}
		srv.Config.Handler = gate
	} else {
		mux := http.NewServeMux()
		mux.Handle("/auth/", e.Handler)
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "app") })
		srv.Config.Handler = mux
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return e
}

// hasEvent reports whether the event name was logged.
func (e *oauthEnv) hasEvent(name string) bool { return len(e.Logs.Events(name)) > 0 }

// newUser stores a user; with a password it has a (never verified) hash.
func (e *oauthEnv) newUser(email string, withPassword bool) storage.User {
	e.t.Helper()
	u := storage.User{ID: storage.NewUserID(), Email: storage.NormalizeEmail(email), CreatedAt: e.Clock.Now()}
	if withPassword {
		u.PasswordHash = "$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g"
	}
	if err := e.Store.CreateUser(e.t.Context(), u); err != nil {
		e.t.Fatal(err)
	}
	return u
}

// identities returns the user's linked identities.
func (e *oauthEnv) identities(userID string) []storage.Identity {
	e.t.Helper()
	ids, err := e.Store.IdentitiesOfUser(e.t.Context(), userID)
	if err != nil {
		e.t.Fatal(err)
	}
	return ids
}

// oauthBrowser is a user agent with a cookie jar that does not follow redirects,
// so each step of a flow can be inspected.
type oauthBrowser struct {
	t      *testing.T
	env    *oauthEnv
	jar    *cookiejar.Jar
	client *http.Client
	accept string // Accept header; "" sends none (API client)
}

func (e *oauthEnv) newBrowser() *oauthBrowser {
	jar, _ := cookiejar.New(nil)
	return &oauthBrowser{t: e.t, env: e, jar: jar, client: &http.Client{
		Jar:           jar,
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// oauthAnswer is a response with its body read.
type oauthAnswer struct {
	status  int
	header  http.Header
	body    string
	cookies []*http.Cookie
}

func (a oauthAnswer) location() string { return a.header.Get("Location") }

// problemCode is the code member of a problem+json body.
func (a oauthAnswer) problemCode() string {
	var p web.Problem
	_ = json.Unmarshal([]byte(a.body), &p)
	return p.Code
}

// cookie returns the Set-Cookie of name, if any.
func (a oauthAnswer) cookie(name string) (*http.Cookie, bool) {
	for _, c := range a.cookies {
		if c.Name == name {
			return c, true
		}
	}
	return nil, false
}

func (b *oauthBrowser) do(method, target string) oauthAnswer {
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
	return oauthAnswer{status: resp.StatusCode, header: resp.Header, body: string(body), cookies: resp.Cookies()}
}

func (b *oauthBrowser) get(target string) oauthAnswer { return b.do(http.MethodGet, target) }

// postForm posts an HTML form (as the account page does).
func (b *oauthBrowser) postForm(path string) oauthAnswer {
	b.t.Helper()
	resp, err := b.client.PostForm(b.env.base+path, url.Values{})
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return oauthAnswer{status: resp.StatusCode, header: resp.Header, body: string(body), cookies: resp.Cookies()}
}

// signIn gives the browser a fresh session of u, as a password login would,
// and returns the session id.
func (b *oauthBrowser) signIn(u storage.User) string {
	b.t.Helper()
	id := newSecret()
	now := b.env.Clock.Now()
	err := b.env.Store.CreateSession(b.t.Context(), storage.Session{
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
func (b *oauthBrowser) sessionID() string {
	base, _ := url.Parse(b.env.base)
	for _, c := range b.jar.Cookies(base) {
		if c.Name == oauthCookieName {
			return c.Value
		}
	}
	return ""
}

// heldTransactionCookie is the transaction cookie the browser would send to
// the callback, nil if it holds none.
func (b *oauthBrowser) heldTransactionCookie() *http.Cookie {
	u, _ := url.Parse(b.env.base + transactionPath)
	for _, c := range b.jar.Cookies(u) {
		if c.Name == transactionCookie {
			return c
		}
	}
	return nil
}

// holdTransactionCookie makes the browser send c to the callback: a browser
// that kept a copy, or one an attacker planted it in.
func (b *oauthBrowser) holdTransactionCookie(c *http.Cookie) {
	b.t.Helper()
	if c == nil {
		b.t.Fatal("no transaction cookie to hold")
	}
	u, _ := url.Parse(b.env.base + transactionPath)
	b.jar.SetCookies(u, []*http.Cookie{{Name: transactionCookie, Value: c.Value, Path: transactionPath}})
}

// setNext chooses the account the named fake provider returns next.
func (e *oauthEnv) setNext(provider string, a oauthtest.Account) {
	switch provider {
	case "google":
		e.google.SetNext(a)
	case "github":
		e.github.SetNext(a)
	}
}

// tokenRequests are the token requests the named fake provider received.
func (e *oauthEnv) tokenRequests(provider string) []url.Values {
	if provider == "google" {
		return e.google.TokenRequests()
	}
	return e.github.TokenRequests()
}

// authorize starts a flow at start (e.g. /auth/login/google?rd=/x), lets the
// fake provider authorize it, and returns the callback URL the provider
// sends the browser to, without opening it.
func (b *oauthBrowser) authorize(start string) string {
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
func (b *oauthBrowser) flow(start string) oauthAnswer {
	b.t.Helper()
	return b.get(b.authorize(start))
}

// me is GET /auth/me decoded; ok is false for any status but 200.
func (b *oauthBrowser) me() (meAnswer, bool) {
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
