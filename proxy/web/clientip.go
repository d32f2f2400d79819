package web

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// TrustedProxies lists the networks whose X-Forwarded-For is believed.
type TrustedProxies []netip.Prefix

// ParseTrustedProxies parses CIDRs (a bare address counts as a /32 or /128).
func ParseTrustedProxies(cidrs []string) (TrustedProxies, error) {
	var t TrustedProxies
	for _, s := range cidrs {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			t = append(t, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR or IP address", s)
		}
		t = append(t, netip.PrefixFrom(a, a.BitLen()))
	}
	return t, nil
}

// Contains reports whether a is in one of the networks.
func (t TrustedProxies) Contains(a netip.Addr) bool {
	for _, p := range t {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Walk is the one reading of X-Forwarded-For. It returns r's TCP peer and
// whether the peer is one of t; only then does it read X-Forwarded-For,
// from the right, and call hop with each address it believes, nearest
// first: every trusted hop, and the first one that is not trusted (the
// client), where it stops. A value that is not an address ends the walk
// before it. A client's own X-Forwarded-For is never believed (PX2).
func (t TrustedProxies) Walk(r *http.Request, hop func(netip.Addr)) (peer netip.Addr, trusted bool) {
	peer = PeerAddr(r.RemoteAddr)
	if len(t) == 0 || !peer.IsValid() || !t.Contains(peer) {
		return peer, false
	}
	lines := r.Header["X-Forwarded-For"]
	for i := len(lines) - 1; i >= 0; i-- {
		for rest := lines[i]; ; {
			j := strings.LastIndexByte(rest, ',')
			a, err := netip.ParseAddr(strings.TrimSpace(rest[j+1:]))
			if err != nil {
				return peer, true
			}
			a = a.Unmap()
			hop(a)
			if !t.Contains(a) {
				return peer, true
			}
			if j < 0 {
				break
			}
			rest = rest[:j]
		}
	}
	return peer, true
}

// ClientIP is the address of the client: the TCP peer, unless the peer is a
// trusted proxy, in which case it is the last address Walk believes.
func (t TrustedProxies) ClientIP(r *http.Request) netip.Addr {
	var client netip.Addr
	peer, _ := t.Walk(r, func(a netip.Addr) { client = a })
	if client.IsValid() {
		return client
	}
	return peer
}

// PeerAddr parses a request's RemoteAddr ("host:port", or a bare address);
// an IPv4-mapped address counts as IPv4. Anything else (a Unix socket) is
// the invalid address.
func PeerAddr(remoteAddr string) netip.Addr {
	if ap, err := netip.ParseAddrPort(remoteAddr); err == nil {
		return ap.Addr().Unmap()
	}
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap()
}
