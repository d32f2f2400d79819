package proxy

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// forgedHeaders are identity and routing headers a client might send, in
// the spellings upstream stacks fold together. Raw keys bypass Go's
// canonicalization, as a client on the wire can.
var forgedHeaders = []string{
	"X-Forwarded-User", "x-forwarded-user", "X-FORWARDED-USER", "X_Forwarded_User", "x_forwarded-user",
	"X-Forwarded-Email", "x_forwarded_email", "X-FORWARDED_EMAIL",
	"X-Auth-Request-User", "X-Auth-Request-Email", "x_auth_request_preferred_username", "X-AUTH-REQUEST-ACCESS-TOKEN", "X-Auth-Request-Groups",
	"Remote-User", "remote_user", "REMOTE-USER", "X-Remote-User",
	"X-Forwarded-Preferred-Username", "X-Forwarded-Groups", "X-Forwarded-Access-Token", "X-Webauth-User", "X_WEBAUTH_USER",
	"X-Original-URL", "X-Original-Uri", "X-Rewrite-URL", "X-Forwarded-Uri", "x_original_url",
	"X_Forwarded_For", "x_forwarded_host", "X_FORWARDED_PROTO", "x_real_ip", "X_Request_Id",
}

func forge(r *http.Request) *http.Request {
	for _, name := range forgedHeaders {
		r.Header[name] = []string{"forged"}
	}
	return r
}

func assertNoForged(t *testing.T, where string, h http.Header) {
	t.Helper()
	for name, values := range h {
		for _, v := range values {
			if strings.Contains(v, "forged") {
				t.Errorf("%s received %s: %q", where, name, v)
			}
		}
	}
}

// PX1: on protected, public and /auth/ paths, and with a hop-by-hop trick.
func TestForgedIdentityHeadersRemoved(t *testing.T) {
	cases := []struct {
		name, target string
		signedIn     bool
	}{
		{"protected, signed in", "/app", true},
		{"public, anonymous", "/static/x", false},
		{"public, signed in", "/static/x", true},
	}
	for _, tc := range cases {
		e := newEnv(t)
		r := forge(get(tc.target))
		if tc.signedIn {
			withCookie(r, e.signIn(sessionID))
		}
		e.serve(r)
		got := e.upstream.last(t)
		assertNoForged(t, tc.name, got.Header)
		wantUser := ""
		if tc.signedIn {
			wantUser = userID
		}
		if v := got.Header.Values("X-Forwarded-User"); (wantUser == "" && len(v) != 0) || (wantUser != "" && (len(v) != 1 || v[0] != wantUser)) {
			t.Errorf("%s: X-Forwarded-User %q, want %q", tc.name, v, wantUser)
		}
	}

	e := newEnv(t)
	e.serve(forge(get("/auth/me")))
	assertNoForged(t, "auth handler", e.auth.last(t).Header)
}

// PX1 over the wire: raw header spellings as a client sends them.
func TestForgedIdentityHeadersRemovedOnTheWire(t *testing.T) {
	e := newEnv(t)
	e.signIn(sessionID)
	server := httptest.NewServer(e.proxy)
	defer server.Close()
	addr := strings.TrimPrefix(server.URL, "http://")
	var forged strings.Builder
	for _, name := range forgedHeaders {
		forged.WriteString(name + ": forged\r\n")
	}
	for _, target := range []string{"/app", "/static/x", "/auth/me"} {
		res := rawRequest(t, addr, "GET", target, forged.String()+"Cookie: gatehouse_session="+sessionID+"\r\n")
		res.Body.Close()
	}
	assertNoForged(t, "upstream", e.upstream.last(t).Header)
	assertNoForged(t, "auth handler", e.auth.last(t).Header)
	if e.upstream.count() != 2 {
		t.Fatalf("upstream got %d requests", e.upstream.count())
	}
}

// PX3: a Connection header naming the identity headers cannot remove them.
func TestHopByHopCannotRemoveProxyHeaders(t *testing.T) {
	e := newEnv(t)
	r := withCookie(get("/app"), e.signIn(sessionID))
	r.Header.Set("Connection", "X-Forwarded-User, X-Forwarded-Email, X-Forwarded-For, X-Forwarded-Host, X-Forwarded-Proto")
	e.serve(r)
	got := e.upstream.last(t)
	for name, want := range map[string]string{
		"X-Forwarded-User": userID, "X-Forwarded-Email": userEmail, "X-Forwarded-For": "192.0.2.1",
		"X-Forwarded-Host": "example.com", "X-Forwarded-Proto": "http",
	} {
		if v := got.Header.Get(name); v != want {
			t.Errorf("%s = %q, want %q", name, v, want)
		}
	}
}

// PX4: routing headers never influence the decision.
func TestRoutingHeadersIgnored(t *testing.T) {
	routing := []string{"X-Forwarded-Uri", "X-Original-URL", "X-Rewrite-URL", "X-Original-Uri"}
	for _, name := range routing {
		e := newEnv(t)
		// A protected path dressed up as public stays protected.
		res := e.serve(get("/admin", name, "/static/x"))
		if e.upstream.count() != 0 || res.StatusCode != http.StatusFound {
			t.Errorf("%s: /admin dressed as public: status %d", name, res.StatusCode)
		}
		// A public path dressed up as /auth/ still goes upstream, without the header.
		e.serve(get("/static/x", name, "/auth/login"))
		if e.upstream.count() != 1 || e.auth.count() != 0 {
			t.Errorf("%s: /static/x dressed as /auth/ was routed by the header", name)
		}
		if v := e.upstream.last(t).Header.Get(name); v != "" {
			t.Errorf("%s forwarded: %q", name, v)
		}
	}
}

// PX2: forwarding headers are believed only from trusted proxies.
func TestForwardingHeadersTrust(t *testing.T) {
	trusted, _ := web.ParseTrustedProxies([]string{"10.0.0.0/8", "fd00::/8"})
	cases := []struct {
		name        string
		remote      string
		xff         []string
		forwarded   string
		proto       string
		wantXFF     string
		wantFwd     string
		wantProto   string
		wantRealIP  string
		realIPInput string
	}{
		{name: "untrusted peer", remote: "203.0.113.9:5555", xff: []string{"1.1.1.1"}, forwarded: "for=1.1.1.1",
			proto: "https", realIPInput: "1.1.1.1", wantXFF: "203.0.113.9", wantProto: "http"},
		{name: "trusted peer, no chain", remote: "10.0.0.1:5555", wantXFF: "10.0.0.1", wantProto: "http"},
		{name: "trusted peer keeps believed chain", remote: "10.0.0.1:5555", xff: []string{"6.6.6.6, 198.51.100.7", "10.0.0.2"},
			forwarded: "for=198.51.100.7;proto=https", proto: "https", realIPInput: "198.51.100.7",
			wantXFF: "198.51.100.7, 10.0.0.2, 10.0.0.1", wantFwd: "for=198.51.100.7;proto=https", wantProto: "https", wantRealIP: "198.51.100.7"},
		{name: "trusted peer, garbage hop", remote: "10.0.0.1:5555", xff: []string{"1.2.3.4, nonsense, 10.0.0.3"},
			wantXFF: "10.0.0.3, 10.0.0.1", wantProto: "http"},
		{name: "trusted peer, bogus proto", remote: "10.0.0.1:5555", proto: "gopher", wantXFF: "10.0.0.1", wantProto: "http"},
		{name: "ipv6 peer", remote: "[2001:db8::1]:443", xff: []string{"1.1.1.1"}, wantXFF: "2001:db8::1", wantProto: "http"},
		{name: "mapped ipv4 peer", remote: "[::ffff:203.0.113.9]:443", wantXFF: "203.0.113.9", wantProto: "http"},
		{name: "trusted ipv6 peer", remote: "[fd00::1]:443", xff: []string{"2001:db8::7"}, wantXFF: "2001:db8::7, fd00::1", wantProto: "http"},
	}
	for _, tc := range cases {
		e := newEnv(t, func(c *Config) { c.TrustedProxies = trusted })
		r := withCookie(get("/app"), e.signIn(sessionID))
		r.RemoteAddr = tc.remote
		for _, v := range tc.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if tc.forwarded != "" {
			r.Header.Set("Forwarded", tc.forwarded)
		}
		if tc.proto != "" {
			r.Header.Set("X-Forwarded-Proto", tc.proto)
		}
		if tc.realIPInput != "" {
			r.Header.Set("X-Real-Ip", tc.realIPInput)
		}
		e.serve(r)
		got := e.upstream.last(t).Header
		if v := strings.Join(got.Values("X-Forwarded-For"), "|"); v != tc.wantXFF {
			t.Errorf("%s: X-Forwarded-For %q, want %q", tc.name, v, tc.wantXFF)
		}
		if v := got.Get("Forwarded"); v != tc.wantFwd {
			t.Errorf("%s: Forwarded %q, want %q", tc.name, v, tc.wantFwd)
		}
		if v := got.Get("X-Forwarded-Proto"); v != tc.wantProto {
			t.Errorf("%s: X-Forwarded-Proto %q, want %q", tc.name, v, tc.wantProto)
		}
		if v := got.Get("X-Real-Ip"); v != tc.wantRealIP {
			t.Errorf("%s: X-Real-Ip %q, want %q", tc.name, v, tc.wantRealIP)
		}
		if v := got.Get("X-Forwarded-Host"); v != "example.com" {
			t.Errorf("%s: X-Forwarded-Host %q", tc.name, v)
		}
		// The first address of the chain is the client IP gatehouse logs and throttles by.
		first, _, _ := strings.Cut(tc.wantXFF, ",")
		if ip := trusted.ClientIP(r); ip != netip.MustParseAddr(first) {
			t.Errorf("%s: chain starts at %s, ClientIP is %s", tc.name, first, ip)
		}
	}
}

func TestForbiddenHeaderSpellings(t *testing.T) {
	for _, name := range forgedHeaders {
		if !forbiddenHeader(name) {
			t.Errorf("%q allowed", name)
		}
	}
	for _, name := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Forwarded", "X-Real-Ip",
		"X-Forwarded-Prefix", "X-Request-Id", "Remote-Addr", "Referer", "X-Auth", "X-Forwarded-Users", "Cookie", "Authorization", "x"} {
		if forbiddenHeader(name) {
			t.Errorf("%q removed", name)
		}
	}
}

// rewrite sets the identity and forwarding headers with one allocation of
// its own (the backing array of their values), and assigns no key that is
// already there: with a small request (User-Agent, Cookie, X-Request-Id)
// the outbound header map holds exactly 8 entries, a full small map, which
// one more assignment would grow. The outbound map is cloned inside the
// measured function, as ReverseProxy does; the clone's own allocations are
// subtracted.
func TestRewriteAllocations(t *testing.T) {
	p := newEnv(t).proxy
	in := httptest.NewRequest(http.MethodGet, "http://gatehouse.test/page", nil)
	in.RemoteAddr = "192.0.2.1:1234"
	in.Header = http.Header{
		"User-Agent":    {"load/1"},
		"Cookie":        {p.cookieName + "=secret"},
		RequestIDHeader: {"0123456789abcdef0123456789abcdef"},
	}
	f := p.newForwarding()
	f.id = identity{userID: "u1", email: "a@example.com", assertion: "header.claims.signature"}
	f.signedIn = true
	out := in.Clone(in.Context())
	clone := testing.AllocsPerRun(200, func() { out.Header = in.Header.Clone() })
	both := testing.AllocsPerRun(200, func() {
		out.Header = in.Header.Clone()
		f.rewrite(&httputil.ProxyRequest{In: in, Out: out})
	})
	if len(out.Header) != 8 {
		t.Fatalf("outbound header has %d entries, the test wants 8: %v", len(out.Header), out.Header)
	}
	if got := out.Header.Get(RequestIDHeader); got != "0123456789abcdef0123456789abcdef" {
		t.Errorf("X-Request-Id %q", got)
	}
	if extra := both - clone; extra > 1 { // the ProxyRequest itself may escape
		t.Errorf("rewrite allocates %v times per request, want at most 1", extra)
	}
}

// RH1: client-sent headers that frameworks use to rebuild the request's URL
// never reach the upstream, in any spelling, on any path, unless a
// --trusted-proxies peer sent them (and then only in the dash spelling).
func TestURLRebuildingHeaders(t *testing.T) {
	names := []string{
		"X-Forwarded-Prefix", "X-Forwarded-Path", "X-Forwarded-Port", "X-Envoy-Original-Path",
		"X-Forwarded-Server", "X-Forwarded-Scheme", "X-Forwarded-Ssl", "X-Original-Host", "X-Host",
		"Front-End-Https", "X-Url-Scheme",
	}
	trusted, _ := web.ParseTrustedProxies([]string{"10.0.0.0/8"})
	for _, name := range names {
		for _, tc := range []struct {
			remote   string
			path     string
			spelling string
			want     bool
		}{
			{"203.0.113.9:5555", "/app", name, false},
			{"203.0.113.9:5555", "/static/x", name, false},
			{"203.0.113.9:5555", "/app", underscored(name), false},
			{"10.0.0.1:5555", "/app", name, true},
			{"10.0.0.1:5555", "/app", underscored(name), false},
		} {
			e := newEnv(t, func(c *Config) { c.TrustedProxies = trusted })
			r := withCookie(get(tc.path), e.signIn(sessionID))
			r.RemoteAddr = tc.remote
			r.Header[tc.spelling] = []string{"/evil"}
			e.serve(r)
			got := e.upstream.last(t).Header
			_, kept := got[tc.spelling]
			if kept != tc.want {
				t.Errorf("%s from %s on %s: forwarded %v, want %v", tc.spelling, tc.remote, tc.path, kept, tc.want)
			}
		}
	}
	// Forwarded from an untrusted peer goes too (ReverseProxy drops it and
	// rewrite sets it only for trusted peers).
	e := newEnv(t)
	r := withCookie(get("/app", "Forwarded", "host=evil.example;proto=https"), e.signIn(sessionID))
	e.serve(r)
	if v := e.upstream.last(t).Header.Get("Forwarded"); v != "" {
		t.Errorf("Forwarded from an untrusted peer reached the upstream: %q", v)
	}
}

func underscored(name string) string {
	b := []byte(name)
	for i, c := range b {
		if c == '-' {
			b[i] = '_'
		}
	}
	return string(b)
}

// The check for the trusted peer allocates nothing.
func TestPeerTrustedDoesNotAllocate(t *testing.T) {
	trusted, _ := web.ParseTrustedProxies([]string{"10.0.0.0/8"})
	p := &Proxy{trusted: trusted}
	v6, v4 := &http.Request{RemoteAddr: "[2001:db8::1]:443"}, &http.Request{RemoteAddr: "10.1.2.3:80"}
	allocs := testing.AllocsPerRun(100, func() {
		_ = p.peerTrusted(v6)
		_ = p.peerTrusted(v4)
	})
	if allocs != 0 {
		t.Errorf("%v allocations", allocs)
	}
	if !p.peerTrusted(v4) || p.peerTrusted(v6) {
		t.Error("10.1.2.3 not trusted, or 2001:db8::1 trusted")
	}
}
