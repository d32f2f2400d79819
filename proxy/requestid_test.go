package proxy

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

var generatedID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// LG2: every request carries one X-Request-Id to the auth handler and to
// the upstream; only a trusted proxy may choose it.
func TestRequestIDAssigned(t *testing.T) {
	trusted, _ := web.ParseTrustedProxies([]string{"10.0.0.0/8"})
	cases := []struct {
		name   string
		remote string
		sent   []string // X-Request-Id values the peer sends
		keep   bool     // the sent id is passed on unchanged
	}{
		{"none sent", "203.0.113.9:1234", nil, false},
		{"client's own id replaced", "203.0.113.9:1234", []string{"client-chosen-id"}, false},
		{"trusted proxy's id kept", "10.1.2.3:1234", []string{"lb-2f1c0e7a-9d3b-4c55-8f00-123456789abc"}, true},
		{"trusted proxy, two ids", "10.1.2.3:1234", []string{"a", "b"}, false},
		{"trusted proxy, empty id", "10.1.2.3:1234", []string{""}, false},
		{"trusted proxy, spaces", "10.1.2.3:1234", []string{"a b"}, false},
		{"trusted proxy, too long", "10.1.2.3:1234", []string{strings.Repeat("a", 129)}, false},
		{"trusted proxy, longest", "10.1.2.3:1234", []string{strings.Repeat("a", 128)}, true},
	}
	for _, tc := range cases {
		for _, target := range []string{"/app", "/auth/me"} {
			e := newEnv(t, func(c *Config) { c.TrustedProxies = trusted })
			r := withCookie(get(target), e.signIn(sessionID))
			r.RemoteAddr = tc.remote
			for _, v := range tc.sent {
				r.Header.Add("X-Request-Id", v)
			}
			e.serve(r)
			rec := e.upstream
			if target == "/auth/me" {
				rec = e.auth
			}
			got := rec.last(t).Header.Values("X-Request-Id")
			if len(got) != 1 {
				t.Errorf("%s %s: X-Request-Id %q, want exactly one", tc.name, target, got)
				continue
			}
			switch {
			case tc.keep && got[0] != tc.sent[0]:
				t.Errorf("%s %s: X-Request-Id %q, want the trusted proxy's %q", tc.name, target, got[0], tc.sent[0])
			case !tc.keep && !generatedID.MatchString(got[0]):
				t.Errorf("%s %s: X-Request-Id %q, want a new random id", tc.name, target, got[0])
			}
		}
	}
}

func TestRequestIDsDiffer(t *testing.T) {
	e := newEnv(t)
	id := e.signIn(sessionID)
	seen := map[string]bool{}
	for range 100 {
		e.serve(withCookie(get("/app"), id))
		v := e.upstream.last(t).Header.Get("X-Request-Id")
		if seen[v] {
			t.Fatalf("request id %q given twice", v)
		}
		seen[v] = true
	}
}

// PX3 for the request id: a Connection header naming it, or an underscore
// spelling, cannot take the id away from the upstream or replace it.
func TestRequestIDSurvivesHeaderTricks(t *testing.T) {
	e := newEnv(t)
	r := withCookie(get("/app"), e.signIn(sessionID))
	r.Header.Set("Connection", "X-Request-Id")
	r.Header["X_Request_Id"] = []string{"forged"}
	e.serve(r)
	got := e.upstream.last(t).Header
	if v := got.Values("X-Request-Id"); len(v) != 1 || !generatedID.MatchString(v[0]) {
		t.Errorf("X-Request-Id %q after the tricks", v)
	}
	assertNoForged(t, "upstream", got)
}

// The proxy's own error lines carry the request id too.
func TestRequestIDInProxyLogs(t *testing.T) {
	e := newEnv(t)
	e.store.setErr(errors.New("down"))
	e.serve(withCookie(get("/app"), sessionID))
	line := e.logs.String()
	if !regexp.MustCompile(`request_id=[0-9a-f]{32}\b`).MatchString(line) {
		t.Fatalf("store failure logged without request id: %q", line)
	}
}

func TestValidRequestID(t *testing.T) {
	for _, ok := range []string{"a", "0f3c", "2f1c0e7a-9d3b-4c55-8f00-123456789abc", "Root=1-67891233-abcdef012345678912345678", "x_y.z:1+2/3=", strings.Repeat("z", 128)} {
		if !validRequestID(ok) {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", " ", "a b", "a\tb", "a\"b", "a;b", "a,b", "ü", "<script>", strings.Repeat("z", 129)} {
		if validRequestID(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
	if !generatedID.MatchString(newRequestID()) {
		t.Errorf("newRequestID() = %q", newRequestID())
	}
}
