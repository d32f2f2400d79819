package authflows

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
)

// Shared test environment of the authflows tests: a Handler over a real bbolt
// store in t.TempDir(), cheap argon2 parameters, a fake clock and a captured
// log. Build one with newTestEnv; change the Config with options.

// testHashParams makes argon2 cheap in tests; production cost is tested in
// authflows/password.
var testHashParams = password.HashParams{Memory: 64, Time: 1, Threads: 1}

// testBaseURL is the base URL of every test environment.
const testBaseURL = "http://gatehouse.test"

// testClientIP is the client address of requests built by testEnv.
const testClientIP = "192.0.2.10"

type testEnv struct {
	Handler *Handler
	Store   *bolt.Store
	DBPath  string // the bbolt file of Store
	Clock   *webtest.Clock
	Logs    *logBuffer           // everything the default Logger wrote (text format, debug level)
	Metrics *prometheus.Registry // Config.Registerer
	Hasher  *password.Hasher     // Config.Hasher
	Config  Config               // as passed to New, after the options
}

// newTestEnv builds a Handler on a fresh bbolt file. Defaults: base URL
// http://gatehouse.test, cookie "gatehouse_session" (not Secure), session TTL
// 168h, idle TTL 24h, reset TTL 30m, minimum password length 12, cheap
// argon2, the fake clock, a text logger at debug level into Logs, a fresh
// Prometheus registry. Each option may change any of it, Store included
// (e.g. to wrap it); the env's Store stays the bbolt store underneath.
func newTestEnv(t testing.TB, options ...func(*Config)) *testEnv {
	t.Helper()
	dbPath := filepath.Join(t.TempDir(), "gatehouse.db")
	store, err := bolt.Open(dbPath, bolt.Options{NoSync: true})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { _ = store.Close() })
	base, _ := url.Parse(testBaseURL)
	env := &testEnv{
		Store:   store,
		DBPath:  dbPath,
		Clock:   webtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)),
		Logs:    &logBuffer{},
		Metrics: prometheus.NewRegistry(),
	}
	cfg := Config{
		BaseURL:           base,
		CookieName:        "gatehouse_session",
		SessionTTL:        168 * time.Hour,
		SessionIdleTTL:    24 * time.Hour,
		ResetTokenTTL:     30 * time.Minute,
		PasswordMinLength: 12,
		Hash:              testHashParams,
		Store:             store,
		Denier:            web.Denier{Mode: web.ModeRedirect, BaseURL: base},
		Clock:             env.Clock.Now,
		Logger:            slog.New(slog.NewTextHandler(env.Logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Registerer:        env.Metrics,
	}
	for _, option := range options {
		option(&cfg)
	}
	if cfg.Hasher == nil {
		cfg.Hasher = password.NewHasher(cfg.Hash)
	}
	env.Config = cfg
	env.Hasher = cfg.Hasher
	if env.Handler, err = New(cfg); err != nil {
		t.Fatalf("New: %v", err)
	}
	return env
}

// NewRequest is httptest.NewRequest from testClientIP with the Host of the
// base URL, so that same-origin checks pass.
func (e *testEnv) NewRequest(method, target string, body io.Reader) *http.Request {
	r := httptest.NewRequest(method, target, body)
	r.RemoteAddr = testClientIP + ":40000"
	r.Host = e.Config.BaseURL.Host
	return r
}

// JSONRequest is a request with v encoded as its JSON body; a string or
// []byte v is sent as it is.
func (e *testEnv) JSONRequest(method, target string, v any) *http.Request {
	var body []byte
	switch v := v.(type) {
	case string:
		body = []byte(v)
	case []byte:
		body = v
	default:
		var err error
		if body, err = json.Marshal(v); err != nil {
			panic(err)
		}
	}
	r := e.NewRequest(method, target, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}

// FormRequest is a POST of an HTML form, as a browser sends it.
func (e *testEnv) FormRequest(target string, form url.Values) *http.Request {
	r := e.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
	return r
}

// Do serves r and returns the answer (body readable, no network).
func (e *testEnv) Do(r *http.Request, cookies ...*http.Cookie) *http.Response {
	for _, c := range cookies {
		if c != nil {
			r.AddCookie(c)
		}
	}
	w := httptest.NewRecorder()
	e.Handler.ServeHTTP(w, r)
	return w.Result()
}

// Get is a GET of target with the cookies.
func (e *testEnv) Get(target string, cookies ...*http.Cookie) *http.Response {
	return e.Do(e.NewRequest(http.MethodGet, target, nil), cookies...)
}

// PostJSON is a POST of v as JSON (see JSONRequest) with the cookies.
func (e *testEnv) PostJSON(target string, v any, cookies ...*http.Cookie) *http.Response {
	return e.Do(e.JSONRequest(http.MethodPost, target, v), cookies...)
}

// PostForm is a browser's form POST with the cookies.
func (e *testEnv) PostForm(target string, form url.Values, cookies ...*http.Cookie) *http.Response {
	return e.Do(e.FormRequest(target, form), cookies...)
}

// CreateUser stores a user with email and password (hashed with the env's
// hasher, after NFKC). An empty password makes a password-less account.
func (e *testEnv) CreateUser(t testing.TB, email, plain string) storage.User {
	t.Helper()
	u := storage.User{ID: randomUserID(), Email: storage.NormalizeEmail(email), CreatedAt: e.Clock.Now()}
	if plain != "" {
		var err error
		if u.PasswordHash, err = e.Hasher.Hash(t.Context(), password.Normalize(plain)); err != nil {
			t.Fatalf("hash: %v", err)
		}
	}
	if err := e.Store.CreateUser(t.Context(), u); err != nil {
		t.Fatalf("create user %s: %v", email, err)
	}
	return u
}

// Login signs in with a JSON POST /auth/login, requires 200 and returns the
// new session cookie.
func (e *testEnv) Login(t testing.TB, email, password string) *http.Cookie {
	t.Helper()
	resp := e.PostJSON("/auth/login", map[string]string{"email": email, "password": password})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login %s: status %d, body %s", email, resp.StatusCode, e.Body(t, resp))
	}
	c := e.SessionCookie(resp)
	if c == nil || c.Value == "" {
		t.Fatalf("login %s: no session cookie in %q", email, resp.Header.Values("Set-Cookie"))
	}
	return c
}

// StartSession stores a session for u directly, as a sign-in would (created
// now, absolute expiry after SessionTTL), and returns its cookie.
func (e *testEnv) StartSession(t testing.TB, u storage.User) *http.Cookie {
	t.Helper()
	sessionID := newSecret()
	now := e.Clock.Now()
	s := storage.Session{
		IDHash: storage.HashSecret(sessionID), UserID: u.ID, Email: u.Email,
		CreatedAt: now, ExpiresAt: now.Add(e.Config.SessionTTL), LastSeen: now,
	}
	if err := e.Store.CreateSession(t.Context(), s); err != nil {
		t.Fatalf("create session: %v", err)
	}
	return &http.Cookie{Name: e.Config.CookieName, Value: sessionID}
}

// linkIdentity links id in s as the link callback does, for a session of
// the user at its current epoch, made for the purpose and deleted after.
func linkIdentity(t testing.TB, s storage.Store, id storage.Identity) {
	t.Helper()
	u, err := s.UserByID(t.Context(), id.UserID)
	if err != nil {
		t.Fatalf("user of the identity: %v", err)
	}
	sess := storage.Session{IDHash: storage.HashSecret(newSecret()), UserID: u.ID, Email: u.Email, Epoch: u.Epoch,
		CreatedAt: id.CreatedAt, LastSeen: id.CreatedAt, ExpiresAt: id.CreatedAt.Add(time.Hour)}
	if err := s.CreateSession(t.Context(), sess); err != nil {
		t.Fatalf("the linking session: %v", err)
	}
	if err := s.LinkIdentity(t.Context(), id, sess.IDHash); err != nil {
		t.Fatalf("link %s identity: %v", id.Provider, err)
	}
	if err := s.DeleteSession(t.Context(), sess.IDHash); err != nil {
		t.Fatal(err)
	}
}

// SessionCookie returns the session cookie the answer sets, or nil.
func (e *testEnv) SessionCookie(resp *http.Response) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == e.Config.CookieName {
			return c
		}
	}
	return nil
}

// Body reads the whole body of resp.
func (e *testEnv) Body(t testing.TB, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(b)) // readable again
	return string(b)
}

// DecodeJSON decodes the body of resp into v, failing the test when the body
// is not JSON.
func (e *testEnv) DecodeJSON(t testing.TB, resp *http.Response, v any) {
	t.Helper()
	body := e.Body(t, resp)
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
}

// ProblemCode requires resp to be an application/problem+json answer with
// status and returns its code member.
func (e *testEnv) ProblemCode(t testing.TB, resp *http.Response, status int) string {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, status, e.Body(t, resp))
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json; body %s", ct, e.Body(t, resp))
	}
	var p web.Problem
	e.DecodeJSON(t, resp, &p)
	if p.Status != status {
		t.Fatalf("problem status %d, want %d", p.Status, status)
	}
	return p.Code
}

// CounterValue is the value of the counter name with exactly these labels in
// Metrics, 0 when it has not been counted yet.
func (e *testEnv) CounterValue(t testing.TB, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := e.Metrics.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// HashRuns is how many argon2 computations the handler's hasher has made.
func (e *testEnv) HashRuns() int64 { return e.Hasher.Runs() }

// hashLimits gives the handler a hasher with the env's argon2 cost and the
// limits l (how long to wait for a slot, how many slots, the rest after a
// hash).
func hashLimits(l password.Limits) func(*Config) {
	return func(c *Config) { c.Hasher = password.NewLimitedHasher(c.Hash, l) }
}

// FillHashSlots takes every hashing slot, so that the next Hash or Verify
// waits the hasher's Limits.Wait and then fails with password.ErrBusy. The
// slots are given back at the end of the test or when the returned function
// is called.
func (e *testEnv) FillHashSlots(t testing.TB) (release func()) {
	t.Helper()
	taken, cancel := context.WithCancel(t.Context())
	cancel() // take free slots only, never wait for one
	var held []func()
	for {
		r, err := e.Hasher.Hold(taken)
		if err != nil {
			break
		}
		held = append(held, r)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			for _, r := range held {
				r()
			}
		})
	}
	t.Cleanup(release)
	return release
}

func randomUserID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// logBuffer is the shared log sink, with the readers the flows' tests use.
type logBuffer struct{ webtest.LogBuffer }

// Lines is everything written so far, one entry per line, without the
// final empty one.
func (b *logBuffer) Lines() []string {
	s := strings.TrimSuffix(b.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// Events returns the log lines of the auth event name (text or JSON format).
func (b *logBuffer) Events(name string) []string {
	var out []string
	for _, line := range b.Lines() {
		if strings.Contains(line, "event="+name+" ") || strings.HasSuffix(line, "event="+name) ||
			strings.Contains(line, `"event":"`+name+`"`) {
			out = append(out, line)
		}
	}
	return out
}

// errFaultyStore is what faultyStore's failing methods return.
var errFaultyStore = errors.New("test: store unavailable")

// faultyStore wraps a Store; the methods named in fail return
// errFaultyStore, every other call goes through. Use it as an option:
//
//	newTestEnv(t, func(c *Config) { c.Store = faultyStore{Store: c.Store.(storage.Store), fail: failing("Session")} })
type faultyStore struct {
	storage.Store
	fail map[string]bool
}

// failing is the set of method names for faultyStore.
func failing(methods ...string) map[string]bool {
	m := map[string]bool{}
	for _, name := range methods {
		m[name] = true
	}
	return m
}

func (s faultyStore) UserByEmail(ctx context.Context, email string) (storage.User, error) {
	if s.fail["UserByEmail"] {
		return storage.User{}, errFaultyStore
	}
	return s.Store.UserByEmail(ctx, email)
}

func (s faultyStore) UserByID(ctx context.Context, id string) (storage.User, error) {
	if s.fail["UserByID"] {
		return storage.User{}, errFaultyStore
	}
	return s.Store.UserByID(ctx, id)
}

func (s faultyStore) UpgradePasswordHash(ctx context.Context, userID, oldHash, newHash string) error {
	if s.fail["UpgradePasswordHash"] {
		return errFaultyStore
	}
	return s.Store.UpgradePasswordHash(ctx, userID, oldHash, newHash)
}

func (s faultyStore) DeleteOtherSessions(ctx context.Context, userID string, keep storage.Hash) (int, error) {
	if s.fail["DeleteOtherSessions"] {
		return 0, errFaultyStore
	}
	return s.Store.DeleteOtherSessions(ctx, userID, keep)
}

func (s faultyStore) ChangePassword(ctx context.Context, userID string, epoch uint64, hash string) (storage.User, int, error) {
	if s.fail["ChangePassword"] {
		return storage.User{}, 0, errFaultyStore
	}
	return s.Store.ChangePassword(ctx, userID, epoch, hash)
}

func (s faultyStore) IdentitiesOfUser(ctx context.Context, userID string) ([]storage.Identity, error) {
	if s.fail["IdentitiesOfUser"] {
		return nil, errFaultyStore
	}
	return s.Store.IdentitiesOfUser(ctx, userID)
}

func (s faultyStore) CreateSession(ctx context.Context, sess storage.Session) error {
	if s.fail["CreateSession"] {
		return errFaultyStore
	}
	return s.Store.CreateSession(ctx, sess)
}

func (s faultyStore) Session(ctx context.Context, idHash storage.Hash) (storage.Session, error) {
	if s.fail["Session"] {
		return storage.Session{}, errFaultyStore
	}
	return s.Store.Session(ctx, idHash)
}

func (s faultyStore) DeleteSession(ctx context.Context, idHash storage.Hash) error {
	if s.fail["DeleteSession"] {
		return errFaultyStore
	}
	return s.Store.DeleteSession(ctx, idHash)
}

func (s faultyStore) DeleteUserSessions(ctx context.Context, userID string) (int, error) {
	if s.fail["DeleteUserSessions"] {
		return 0, errFaultyStore
	}
	return s.Store.DeleteUserSessions(ctx, userID)
}

// TxID is the id of the last committed write transaction of the env's bbolt
// file, read from the file's two meta pages (the newer one counts). bbolt
// writes pages with pwrite even with NoSync, so the file shows every commit
// at once. A read-only transaction never changes it: a test compares it
// before and after to see whether requests wrote anything (DS1).
func (e *testEnv) TxID(t testing.TB) uint64 {
	t.Helper()
	data, err := os.ReadFile(e.DBPath)
	if err != nil {
		t.Fatalf("read %s: %v", e.DBPath, err)
	}
	// A meta page: a 16-byte page header, then magic, version, page size and
	// flags (uint32 each), the root bucket (16 bytes), the freelist and
	// high-water page ids (uint64 each), the txid.
	const header, magic, pageSizeAt, txidAt = 16, 0xED0CDAED, 16 + 8, 16 + 48
	order := binary.NativeEndian
	if len(data) < txidAt+8 || order.Uint32(data[header:]) != magic {
		t.Fatalf("%s: not a bbolt file", e.DBPath)
	}
	pageSize := int(order.Uint32(data[pageSizeAt:]))
	if len(data) < pageSize+txidAt+8 || order.Uint32(data[pageSize+header:]) != magic {
		t.Fatalf("%s: second meta page missing", e.DBPath)
	}
	return max(order.Uint64(data[txidAt:]), order.Uint64(data[pageSize+txidAt:]))
}

// IssueResetToken stores a fresh reset token for u directly, as the
// delivery of a reset mail would (valid for ResetTokenTTL from now, older
// ones voided), and returns the token.
func (e *testEnv) IssueResetToken(t testing.TB, u storage.User) string {
	t.Helper()
	resetToken := newSecret()
	now := e.Clock.Now()
	tok := storage.ResetToken{Hash: storage.HashSecret(resetToken), UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(e.Config.ResetTokenTTL)}
	if err := e.Store.IssueResetToken(t.Context(), tok); err != nil {
		t.Fatalf("issue reset token: %v", err)
	}
	return resetToken
}

// ResetTokenValid reports whether resetToken can still be used now.
func (e *testEnv) ResetTokenValid(t testing.TB, resetToken string) bool {
	t.Helper()
	_, err := e.Store.ResetTokenUser(t.Context(), storage.HashSecret(resetToken), e.Clock.Now())
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("reset token lookup: %v", err)
	}
	return err == nil
}

// receive takes the next value of c; it fails the test when nothing comes
// for a minute, a guard against a hang that no passing run comes near.
func receive[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("no %s: hung", what)
		panic("unreachable")
	}
}
