package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-auth/gatehouse/proxy/route"
	"github.com/gatehouse-auth/gatehouse/proxy/session"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// fakeStore is an in-memory SessionSource and SessionToucher.
type fakeStore struct {
	mu       sync.Mutex
	sessions map[storage.Hash]storage.Session
	err      error
	reads    atomic.Int64
	touches  []map[storage.Hash]time.Time
}

func newFakeStore() *fakeStore {
	return &fakeStore{sessions: make(map[storage.Hash]storage.Session)}
}

func (f *fakeStore) Session(_ context.Context, idHash storage.Hash) (storage.Session, error) {
	f.reads.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return storage.Session{}, f.err
	}
	s, ok := f.sessions[idHash]
	if !ok {
		return storage.Session{}, fmt.Errorf("fake: %w", storage.ErrNotFound)
	}
	return s, nil
}

func (f *fakeStore) TouchSessions(_ context.Context, lastSeen map[storage.Hash]time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	batch := make(map[storage.Hash]time.Time, len(lastSeen))
	for h, at := range lastSeen {
		batch[h] = at
		if s, ok := f.sessions[h]; ok {
			s.LastSeen = at
			f.sessions[h] = s
		}
	}
	f.touches = append(f.touches, batch)
	return nil
}

func (f *fakeStore) put(id string, s storage.Session) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s.IDHash = storage.HashSecret(id)
	f.sessions[s.IDHash] = s
}

func (f *fakeStore) remove(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.sessions, storage.HashSecret(id))
}

func (f *fakeStore) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *fakeStore) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sessions)
}

// writesFor counts the TouchSessions batches that carried the session.
func (f *fakeStore) writesFor(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, batch := range f.touches {
		if _, ok := batch[storage.HashSecret(id)]; ok {
			n++
		}
	}
	return n
}

func (f *fakeStore) touchCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.touches)
}

var epoch = time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)

// seenRequest is what the upstream (or the auth handler) received.
type seenRequest struct {
	Method, Path, RawPath, RequestURI, Host string
	Header                                  http.Header
}

// recorder is an upstream or auth handler that remembers every request.
type recorder struct {
	mu      sync.Mutex
	seen    []seenRequest
	handler http.HandlerFunc // optional answer; default 200 "ok"
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.mu.Lock()
	rec.seen = append(rec.seen, seenRequest{
		Method: r.Method, Path: r.URL.Path, RawPath: r.URL.RawPath, RequestURI: r.RequestURI,
		Host: r.Host, Header: r.Header.Clone(),
	})
	handler := rec.handler
	rec.mu.Unlock()
	if handler != nil {
		handler(w, r)
		return
	}
	io.WriteString(w, "ok")
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.seen)
}

func (rec *recorder) all() []seenRequest {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]seenRequest(nil), rec.seen...)
}

func (rec *recorder) last(t *testing.T) seenRequest {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.seen) == 0 {
		t.Fatal("nothing received")
	}
	return rec.seen[len(rec.seen)-1]
}

// syncBuffer is the shared concurrency-safe log sink.
type syncBuffer = webtest.LogBuffer

// env is a proxy in front of a recording upstream, with a fake store, a
// recording auth handler and an injected clock.
type env struct {
	proxy    *Proxy
	store    *fakeStore
	upstream *recorder
	upURL    *url.URL
	auth     *recorder
	clock    *webtest.Clock
	logs     *syncBuffer
	registry *prometheus.Registry
	lastSeen *session.LastSeen
}

const (
	userID    = "0123456789abcdef0123456789abcdef"
	userEmail = "ada@example.com"
	sessionID = "s3ss10n-1d-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
)

var baseURL = &url.URL{Scheme: "https", Host: "gate.example.com"}

func newEnv(t *testing.T, configure ...func(*Config)) *env {
	t.Helper()
	e := &env{
		store:    newFakeStore(),
		upstream: &recorder{},
		auth:     &recorder{},
		clock:    webtest.NewClock(epoch),
		logs:     &syncBuffer{},
		registry: prometheus.NewRegistry(),
	}
	server := httptest.NewServer(e.upstream)
	t.Cleanup(server.Close)
	e.upURL, _ = url.Parse(server.URL)
	e.lastSeen = &session.LastSeen{Store: e.store, Clock: e.clock.Now}
	cfg := Config{
		Upstream:        e.upURL,
		Auth:            e.auth,
		Sessions:        e.store,
		LastSeen:        e.lastSeen,
		Routes:          liveRules(t, []string{"/static", "/public/"}),
		Denier:          web.Denier{Mode: web.ModeRedirect, BaseURL: baseURL},
		IdleTTL:         time.Hour,
		UpstreamTimeout: 5 * time.Second,
		Clock:           e.clock.Now,
		Logger:          slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Registerer:      e.registry,
	}
	for _, f := range configure {
		f(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.proxy = p
	return e
}

// signIn stores a valid session and returns its id.
func (e *env) signIn(id string) string {
	e.store.put(id, storage.Session{
		UserID: userID, Email: userEmail,
		CreatedAt: epoch.Add(-time.Hour), ExpiresAt: epoch.Add(24 * time.Hour), LastSeen: epoch.Add(-10 * time.Second),
	})
	return id
}

// serve runs one request through the proxy in process.
func (e *env) serve(r *http.Request) *http.Response {
	w := httptest.NewRecorder()
	e.proxy.ServeHTTP(w, r)
	return w.Result()
}

func get(target string, header ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	return r
}

func withCookie(r *http.Request, id string) *http.Request {
	r.Header.Add("Cookie", DefaultCookieName+"="+id)
	return r
}

func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return string(b)
}

// rawRequest sends target verbatim on the request line, so that no client
// library cleans or re-encodes it.
func rawRequest(t *testing.T, addr, method, target, headers string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: gate.example.com\r\n%sConnection: close\r\n\r\n", method, target, headers)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	return res
}

// counterValue reads gatehouse_proxy_requests_total{outcome}.
func (e *env) counterValue(t *testing.T, outcome string) float64 {
	t.Helper()
	families, err := e.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != "gatehouse_proxy_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// lookupCount reads the sample count of gatehouse_session_lookup_seconds.
func (e *env) lookupCount(t *testing.T) uint64 {
	t.Helper()
	families, err := e.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() == "gatehouse_session_lookup_seconds" {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return 0
}

// liveRules is the route table of publicPaths (as --public-path) and rules,
// in force in a route.Live as the server holds it.
func liveRules(t testing.TB, publicPaths []string, rules ...route.Rule) *route.Live {
	t.Helper()
	table, err := route.NewTable(publicPaths, rules)
	if err != nil {
		t.Fatal(err)
	}
	live := &route.Live{}
	live.Store(table)
	return live
}
