package proxy

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

func TestSessionStates(t *testing.T) {
	cases := []struct {
		name    string
		session *storage.Session // nil: no record
		cookie  string
		ok      bool
	}{
		{"valid", &storage.Session{ExpiresAt: epoch.Add(time.Hour), LastSeen: epoch.Add(-time.Minute)}, sessionID, true},
		{"no cookie", &storage.Session{ExpiresAt: epoch.Add(time.Hour), LastSeen: epoch}, "", false},
		{"unknown id", nil, "random-cookie-value", false},
		{"empty value", nil, `""`, false},
		{"absolute expiry reached", &storage.Session{ExpiresAt: epoch, LastSeen: epoch}, sessionID, false},
		{"absolute expiry passed", &storage.Session{ExpiresAt: epoch.Add(-time.Second), LastSeen: epoch}, sessionID, false},
		{"idle too long", &storage.Session{ExpiresAt: epoch.Add(time.Hour), LastSeen: epoch.Add(-time.Hour)}, sessionID, false},
		{"idle just within", &storage.Session{ExpiresAt: epoch.Add(time.Hour), LastSeen: epoch.Add(-time.Hour + time.Second)}, sessionID, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.session != nil {
				s := *tc.session
				s.UserID, s.Email = userID, userEmail
				e.store.put(sessionID, s)
			}
			records := e.store.count()
			r := get("/app")
			if tc.cookie != "" {
				withCookie(r, tc.cookie)
			}
			res := e.serve(r)
			if reached := e.upstream.count() == 1; reached != tc.ok {
				t.Fatalf("reached upstream %v, want %v (status %d)", reached, tc.ok, res.StatusCode)
			}
			// SS3: an unknown or expired id creates no record and no write.
			if err := e.lastSeen.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			if !tc.ok && (e.store.count() != records || e.store.touchCalls() != 0) {
				t.Errorf("rejected session wrote: %d records (was %d), %d touches", e.store.count(), records, e.store.touchCalls())
			}
		})
	}
}

func TestRevocationAndExpiryOnNextRequest(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.IdleTTL = 30 * time.Minute })
	id := e.signIn(sessionID)
	ok := func() bool {
		before := e.upstream.count()
		e.serve(withCookie(get("/app"), id))
		return e.upstream.count() > before
	}
	if !ok() {
		t.Fatal("valid session refused")
	}
	e.store.remove(id)
	if ok() {
		t.Fatal("deleted session still forwarded")
	}

	e.signIn(id) // LastSeen epoch-10s, ExpiresAt epoch+24h
	e.clock.Advance(29 * time.Minute)
	if !ok() {
		t.Fatal("session refused within the idle limit")
	}
	e.clock.Advance(2 * time.Minute) // LastSeen was never flushed: 31 min idle
	if ok() {
		t.Fatal("idle session forwarded")
	}

	e.signIn(id)
	e.store.put(id, storage.Session{UserID: userID, ExpiresAt: e.clock.Now().Add(time.Minute), LastSeen: e.clock.Now()})
	if !ok() {
		t.Fatal("session refused before absolute expiry")
	}
	e.clock.Advance(time.Minute)
	if ok() {
		t.Fatal("session forwarded at absolute expiry")
	}
	if reads := e.store.reads.Load(); reads != 6 {
		t.Errorf("%d store reads for 6 requests, want one each", reads)
	}
}

func TestSessionIDOnlyFromCookie(t *testing.T) {
	cases := []struct {
		name string
		req  *http.Request
		ok   bool
	}{
		{"cookie header", get("/app", "Cookie", "gatehouse_session="+sessionID), true},
		{"among other cookies", get("/app", "Cookie", "a=1; gatehouse_session="+sessionID+"; b=2"), true},
		{"second cookie header", get("/app", "Cookie", "a=1", "Cookie", "gatehouse_session="+sessionID), true},
		{"quoted", get("/app", "Cookie", `gatehouse_session="`+sessionID+`"`), true},
		{"query parameter", get("/app?gatehouse_session=" + sessionID), false},
		{"authorization header", get("/app", "Authorization", "Bearer "+sessionID), false},
		{"custom header", get("/app", "Gatehouse-Session", sessionID), false},
		{"header named like the cookie", get("/app", "gatehouse_session", sessionID), false},
		{"other cookie name", get("/app", "Cookie", "session="+sessionID), false},
		{"name case differs", get("/app", "Cookie", "Gatehouse_Session="+sessionID), false},
		{"longer names", get("/app", "Cookie", "xgatehouse_session="+sessionID+"; gatehouse_session_2="+sessionID), false},
		{"name as value", get("/app", "Cookie", "x="+sessionID+"gatehouse_session"), false},
	}
	for _, tc := range cases {
		e := newEnv(t)
		e.signIn(sessionID)
		e.serve(tc.req)
		if reached := e.upstream.count() == 1; reached != tc.ok {
			t.Errorf("%s: reached upstream %v, want %v", tc.name, reached, tc.ok)
		}
	}
}

func TestSessionCookieStrippedUpstream(t *testing.T) {
	cases := []struct {
		name    string
		cookies []string
		want    []string // nil: no Cookie header at all
	}{
		{"alone", []string{"gatehouse_session=" + sessionID}, nil},
		{"middle", []string{"a=1; gatehouse_session=" + sessionID + "; b=2"}, []string{"a=1; b=2"}},
		{"first", []string{"gatehouse_session=" + sessionID + ";theme=dark"}, []string{"theme=dark"}},
		{"duplicate", []string{"gatehouse_session=" + sessionID + "; a=1; gatehouse_session=other"}, []string{"a=1"}},
		{"two headers", []string{"a=1; b=\"q\"", "gatehouse_session=" + sessionID}, []string{"a=1; b=\"q\""}},
		{"similar names kept", []string{"gatehouse_session=" + sessionID + "; gatehouse_session_x=1; xgatehouse_session=2"},
			[]string{"gatehouse_session_x=1; xgatehouse_session=2"}},
	}
	for _, tc := range cases {
		e := newEnv(t)
		e.signIn(sessionID)
		r := get("/app")
		for _, c := range tc.cookies {
			r.Header.Add("Cookie", c)
		}
		e.serve(r)
		got := e.upstream.last(t).Header.Values("Cookie")
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || (tc.want == nil) != (got == nil) {
			t.Errorf("%s: upstream Cookie %q, want %q", tc.name, got, tc.want)
		}
	}
	// Public path, no valid session: the cookie is still not forwarded.
	e := newEnv(t)
	e.serve(get("/static/x", "Cookie", "gatehouse_session=unknown; a=1"))
	if got := e.upstream.last(t).Header.Values("Cookie"); len(got) != 1 || got[0] != "a=1" {
		t.Errorf("public path: upstream Cookie %q", got)
	}
}

func TestUpstreamSetCookieDropped(t *testing.T) {
	e := newEnv(t)
	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Add("Set-Cookie", "gatehouse_session=planted; Path=/; HttpOnly")
		h.Add("Set-Cookie", "theme=dark; Path=/")
		h.Add("Set-Cookie", " gatehouse_session =x")
		h.Add("Set-Cookie", "=gatehouse_session=nameless")
		h.Add("Set-Cookie", "gatehouse_session=; Max-Age=0")
		h.Add("Set-Cookie", "gatehouse_session_other=1")
	}
	res := e.serve(withCookie(get("/app"), e.signIn(sessionID)))
	got := res.Header.Values("Set-Cookie")
	want := []string{"theme=dark; Path=/", "gatehouse_session_other=1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("Set-Cookie %q, want %q", got, want)
	}

	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Set-Cookie", "gatehouse_session=planted")
	}
	res = e.serve(get("/static/x"))
	if got := res.Header.Values("Set-Cookie"); len(got) != 0 {
		t.Fatalf("public path: Set-Cookie %q", got)
	}
}

func TestStoreErrorFailsClosed(t *testing.T) {
	for _, target := range []string{"/app", "/static/x"} {
		e := newEnv(t)
		e.signIn(sessionID)
		e.store.setErr(errors.New("disk on fire"))
		res := e.serve(withCookie(get(target), sessionID))
		if res.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s: status %d", target, res.StatusCode)
		}
		var p web.Problem
		if err := json.NewDecoder(res.Body).Decode(&p); err != nil || p.Code != "store_unavailable" {
			t.Errorf("%s: problem %+v %v", target, p, err)
		}
		if e.upstream.count() != 0 {
			t.Errorf("%s: forwarded despite a store error", target)
		}
		if e.counterValue(t, "error") != 1 {
			t.Errorf("%s: error not counted", target)
		}
		if strings.Contains(e.logs.String(), sessionID) {
			t.Errorf("%s: session id logged", target)
		}
	}
}

// SS5 through the proxy: stale sessions are queued, never written on the
// request path, and written once per minute.
func TestProxyRecordsLastSeenOffRequestPath(t *testing.T) {
	e := newEnv(t)
	e.signIn(sessionID) // LastSeen 10 s ago: fresh enough, nothing queued
	for range 5 {
		e.serve(withCookie(get("/app"), sessionID))
	}
	if err := e.lastSeen.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if e.store.touchCalls() != 0 {
		t.Fatal("fresh session written")
	}

	e.clock.Advance(2 * time.Minute) // now stale
	for range 50 {
		e.serve(withCookie(get("/app"), sessionID))
	}
	if e.store.touchCalls() != 0 {
		t.Fatal("last-seen written on the request path")
	}
	if err := e.lastSeen.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if e.store.writesFor(sessionID) != 1 {
		t.Fatalf("%d writes, want 1", e.store.writesFor(sessionID))
	}
	s, _ := e.store.Session(t.Context(), storage.HashSecret(sessionID))
	if !s.LastSeen.Equal(e.clock.Now()) {
		t.Fatalf("stored LastSeen %v, want %v", s.LastSeen, e.clock.Now())
	}

	e.clock.Advance(30 * time.Second)
	e.serve(withCookie(get("/app"), sessionID))
	e.lastSeen.Flush(t.Context())
	if e.store.writesFor(sessionID) != 1 {
		t.Fatal("written again within a minute")
	}
	e.clock.Advance(31 * time.Second)
	e.serve(withCookie(get("/app"), sessionID))
	e.lastSeen.Flush(t.Context())
	if e.store.writesFor(sessionID) != 2 {
		t.Fatal("not written after a minute")
	}
}

// With an idle TTL shorter than the default touch interval, a session used
// every few seconds stays active in the store: last-seen is written often
// enough that the idle sweep never takes it.
func TestShortIdleTTLKeepsActiveSessions(t *testing.T) {
	const idle = 40 * time.Second
	e := newEnv(t, func(c *Config) { c.IdleTTL = idle })
	e.signIn(sessionID)
	h := storage.HashSecret(sessionID)
	for step := range 60 { // 5 minutes of use, one request every 5 s
		e.clock.Advance(5 * time.Second)
		if res := e.serve(withCookie(get("/app"), sessionID)); res.StatusCode != http.StatusOK {
			t.Fatalf("step %d: active session refused: %d", step, res.StatusCode)
		}
		if step%2 == 1 { // a flush at every second request: Run's period for this TTL
			if err := e.lastSeen.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		s, err := e.store.Session(t.Context(), h)
		if err != nil {
			t.Fatal(err)
		}
		if !s.Active(e.clock.Now(), idle) {
			t.Fatalf("step %d: stored LastSeen %v is idle at %v: the sweep would delete an active session",
				step, s.LastSeen, e.clock.Now())
		}
	}
}

// SS8: with an https --base-url the session cookie is named
// __Host-gatehouse_session (CK1), but browsers that signed in before (v1,
// or the same deployment on http or with --cookie-secure=false) still hold
// gatehouse_session=<session id>, Max-Age up to --session-ttl. Those
// sessions stay in the store, so that id is a live credential: sent as
// __Host-gatehouse_session by anyone who reads it, it signs them in. The
// proxy reads only the configured name but strips the old one too, so the
// upstream (its logs, its error reports) never gets that id.
func TestLegacySessionCookieIsNotForwarded(t *testing.T) {
	const hostName = "__Host-" + DefaultCookieName
	e := newEnv(t, func(c *Config) { c.CookieName = hostName })
	current := e.signIn(sessionID)
	legacy := e.signIn("l3gacy-s3ss10n-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA") // made under the old name

	// The legacy id is live: under the current name it signs in.
	r := get("/app", "Cookie", hostName+"="+legacy)
	if res := e.serve(r); res.StatusCode != 200 {
		t.Fatalf("test premise: the legacy session does not authenticate: %d", res.StatusCode)
	}

	// A browser that signed in again carries both cookies.
	r = get("/app", "Cookie", DefaultCookieName+"="+legacy+"; "+hostName+"="+current+"; theme=dark")
	if res := e.serve(r); res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	if got := strings.Join(e.upstream.last(t).Header["Cookie"], "; "); strings.Contains(got, legacy) {
		t.Errorf("the upstream received a live session id in the old cookie name: Cookie %q", got)
	}
}

// Gatehouse's other cookies sent on every path (the __Host- OAuth
// transaction cookie) never reach the upstream either (SS8).
func TestOwnCookiesAreNotForwarded(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.OwnCookies = []string{"__Host-gatehouse_oauth"} })
	session := e.signIn(sessionID)
	r := get("/app", "Cookie", "__Host-gatehouse_oauth=browser-binding; "+DefaultCookieName+"="+session+"; theme=dark")
	if res := e.serve(r); res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	if got := strings.Join(e.upstream.last(t).Header["Cookie"], "; "); got != "theme=dark" {
		t.Errorf("the upstream received Cookie %q, want only theme=dark", got)
	}
}

// The upstream can neither set nor clear any of Gatehouse's cookies (SS8):
// the session cookie, its name without the __Host- prefix, and the other
// cookies Gatehouse sets; its own cookies pass.
func TestUpstreamCannotSetOwnCookies(t *testing.T) {
	const hostName = "__Host-" + DefaultCookieName
	e := newEnv(t, func(c *Config) {
		c.CookieName = hostName
		c.OwnCookies = []string{"__Host-gatehouse_oauth"}
	})
	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		for _, line := range []string{
			hostName + "=planted; Path=/; Secure", DefaultCookieName + "=planted",
			"__Host-gatehouse_oauth=; Max-Age=0", "theme=dark",
		} {
			w.Header().Add("Set-Cookie", line)
		}
	}
	res := e.serve(get("/app", "Cookie", hostName+"="+e.signIn(sessionID)))
	if got := res.Header.Values("Set-Cookie"); len(got) != 1 || got[0] != "theme=dark" {
		t.Fatalf("Set-Cookie %q, want only theme=dark", got)
	}
}
