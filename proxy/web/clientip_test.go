package web

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestClientIP(t *testing.T) {
	trusted, err := ParseTrustedProxies([]string{"10.0.0.0/8", "fd00::/8", "192.0.2.10"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		trusted TrustedProxies
		remote  string
		xff     []string // X-Forwarded-For header lines
		want    string   // "" for the invalid address
	}{
		// PX2: a client's own X-Forwarded-For is never believed.
		{"untrusted peer, forged XFF", trusted, "203.0.113.9:5555", []string{"1.1.1.1"}, "203.0.113.9"},
		{"no trusted proxies, forged XFF", nil, "10.0.0.1:5555", []string{"1.1.1.1"}, "10.0.0.1"},
		{"untrusted peer, forged Forwarded-style chain", trusted, "203.0.113.9:5555", []string{"10.0.0.1, 1.1.1.1"}, "203.0.113.9"},
		// Trusted peers: walk from the right past trusted hops.
		{"trusted peer, no XFF", trusted, "10.0.0.1:5555", nil, "10.0.0.1"},
		{"trusted peer, one hop", trusted, "10.0.0.1:5555", []string{"198.51.100.7"}, "198.51.100.7"},
		{"trusted chain", trusted, "10.0.0.1:5555", []string{"6.6.6.6, 198.51.100.7, 10.0.0.2"}, "198.51.100.7"},
		{"trusted chain over two lines", trusted, "10.0.0.1:5555", []string{"6.6.6.6, 198.51.100.7", "10.0.0.2"}, "198.51.100.7"},
		{"client forges a trusted address on the left", trusted, "10.0.0.1:5555", []string{"10.9.9.9, 198.51.100.7"}, "198.51.100.7"},
		{"every hop trusted", trusted, "10.0.0.1:5555", []string{"10.0.0.3, 10.0.0.2"}, "10.0.0.3"},
		{"bare address trusted as /32", trusted, "192.0.2.10:80", []string{"198.51.100.7"}, "198.51.100.7"},
		{"neighbour of a bare address", trusted, "192.0.2.11:80", []string{"198.51.100.7"}, "192.0.2.11"},
		// IPv6.
		{"ipv6 peer", trusted, "[2001:db8::1]:443", []string{"1.1.1.1"}, "2001:db8::1"},
		{"trusted ipv6 peer", trusted, "[fd00::1]:443", []string{"2001:db8::7"}, "2001:db8::7"},
		{"ipv6 in the chain", trusted, "10.0.0.1:443", []string{"2001:db8::7, fd00::2"}, "2001:db8::7"},
		{"mapped ipv4 peer", trusted, "[::ffff:203.0.113.9]:443", nil, "203.0.113.9"},
		{"mapped trusted peer", trusted, "[::ffff:10.0.0.1]:443", []string{"198.51.100.7"}, "198.51.100.7"},
		{"mapped address in the chain", trusted, "10.0.0.1:443", []string{"::ffff:198.51.100.7"}, "198.51.100.7"},
		{"zoned peer", nil, "[fe80::1%eth0]:443", nil, "fe80::1%eth0"},
		// Malformed input: the walk stops at the first hop it cannot read.
		{"garbage hop", trusted, "10.0.0.1:5555", []string{"1.2.3.4, nonsense, 10.0.0.3"}, "10.0.0.3"},
		{"garbage right of the peer", trusted, "10.0.0.1:5555", []string{"nonsense"}, "10.0.0.1"},
		{"empty hop", trusted, "10.0.0.1:5555", []string{"1.2.3.4, , 10.0.0.2"}, "10.0.0.2"},
		{"hop with a port", trusted, "10.0.0.1:5555", []string{"198.51.100.7:1234"}, "10.0.0.1"},
		{"peer without port", trusted, "203.0.113.9", nil, "203.0.113.9"},
		{"peer not an address", trusted, "not-an-address:80", []string{"1.1.1.1"}, ""},
		{"unix socket peer", trusted, "@", []string{"1.1.1.1"}, ""},
		{"empty peer", trusted, "", []string{"1.1.1.1"}, ""},
	}
	for _, tc := range cases {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tc.remote
		for _, v := range tc.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		got := tc.trusted.ClientIP(r)
		var want netip.Addr
		if tc.want != "" {
			want = netip.MustParseAddr(tc.want)
		}
		if got != want {
			t.Errorf("%s: ClientIP = %v, want %v", tc.name, got, want)
		}
	}
}

// Walk hands the believed hops over nearest first, and reads nothing
// unless the peer is trusted: the proxy builds the X-Forwarded-For it
// sends from the same walk that gives ClientIP.
func TestWalk(t *testing.T) {
	trusted, err := ParseTrustedProxies([]string{"10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, remote string
		xff          []string
		trusted      bool
		hops         string
	}{
		{"untrusted peer", "203.0.113.9:1", []string{"10.0.0.2, 1.1.1.1"}, false, ""},
		{"trusted peer, no header", "10.0.0.1:1", nil, true, ""},
		{"chain", "10.0.0.1:1", []string{"6.6.6.6, 198.51.100.7", "10.0.0.3, 10.0.0.2"}, true, "10.0.0.2 10.0.0.3 198.51.100.7"},
		{"stops at garbage", "10.0.0.1:1", []string{"1.1.1.1, x, 10.0.0.2"}, true, "10.0.0.2"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tc.remote
		for _, v := range tc.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		var hops []string
		peer, ok := trusted.Walk(r, func(a netip.Addr) { hops = append(hops, a.String()) })
		if ok != tc.trusted || strings.Join(hops, " ") != tc.hops || peer != PeerAddr(tc.remote) {
			t.Errorf("%s: Walk = %v, %v, hops %q; want trusted %v, hops %q", tc.name, peer, ok, hops, tc.trusted, tc.hops)
		}
	}
}

func TestParseTrustedProxies(t *testing.T) {
	got, err := ParseTrustedProxies([]string{" 10.1.2.3/8 ", "192.0.2.1", "2001:db8::1", "fd00::/8", ""})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.0/8", "192.0.2.1/32", "2001:db8::1/128", "fd00::/8"}
	if len(got) != len(want) {
		t.Fatalf("parsed %v, want %v", got, want)
	}
	for i, p := range got {
		if p.String() != want[i] {
			t.Errorf("prefix %d = %s, want %s", i, p, want[i])
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "10.0.0", "example.com", "10.0.0.0/8/8", "::1/129"} {
		if _, err := ParseTrustedProxies([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
