package proxy

import (
	"net/http"
	"testing"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

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
