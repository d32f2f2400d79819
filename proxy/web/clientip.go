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

func (t TrustedProxies) trusts(a netip.Addr) bool {
	for _, p := range t {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ClientIP is the address of the client: the TCP peer, unless the peer is a
// trusted proxy, in which case X-Forwarded-For is walked from the right past
// trusted hops. A client's own X-Forwarded-For is never believed.
func (t TrustedProxies) ClientIP(r *http.Request) netip.Addr {
	peer := remoteAddr(r.RemoteAddr)
	if len(t) == 0 || !peer.IsValid() || !t.trusts(peer) {
		return peer
	}
	client := peer
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			a, err := netip.ParseAddr(strings.TrimSpace(parts[j]))
			if err != nil {
				return client
			}
			client = a.Unmap()
			if !t.trusts(client) {
				return client
			}
		}
	}
	return client
}

func remoteAddr(hostport string) netip.Addr {
	if ap, err := netip.ParseAddrPort(hostport); err == nil {
		return ap.Addr().Unmap()
	}
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap()
}
