package proxy

import (
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strings"

	"github.com/gatehouse-auth/gatehouse/proxy/session"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// Header names a client may not send, compared case-insensitively with "_"
// read as "-": some upstream stacks (CGI, WSGI, Rack, PHP) map both spellings
// to the same variable (oauth2-proxy CVE-2025-64484).
var (
	// Identity: only Gatehouse says who the user is (PX1). The oauth2-proxy
	// and Grafana auth-proxy names are included for apps that migrate.
	identityHeaders = []string{
		"x-forwarded-user", "x-forwarded-email", "remote-user", "x-remote-user",
		"x-forwarded-preferred-username", "x-forwarded-groups", "x-forwarded-access-token",
		"x-gatehouse-jwt-assertion", // JW1
	}
	identityPrefixes = []string{"x-auth-request-", "x-webauth-"}

	// Routing: headers that some upstreams prefer to the request line
	// (Symfony, IIS, nginx auth_request). The decision never reads them (PX4)
	// and the upstream does not get the client's copies.
	routingHeaders = []string{"x-original-url", "x-original-uri", "x-rewrite-url", "x-forwarded-uri"}

	// Forwarding: Gatehouse sets these itself (see rewrite); spelled with "_"
	// they would slip past that, so they are removed.
	forwardingHeaders = []string{"x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "forwarded", "x-real-ip", "x-request-id"}

	// URL rebuilding: headers that frameworks (Spring, ASP.NET, Rails,
	// Express, Symfony, Traefik, Envoy) read to rebuild the request's public
	// URL or prefix. A proxy in front may set them; a client may not (RH1).
	// Forwarded, X-Forwarded-Host and X-Forwarded-Proto are handled by
	// rewrite itself.
	urlRebuildingHeaders = []string{
		"x-forwarded-prefix", "x-forwarded-path", "x-forwarded-port", "x-forwarded-server",
		"x-forwarded-scheme", "x-forwarded-ssl", "x-forwarded-protocol", "x-forwarded-base",
		"x-envoy-original-path", "x-envoy-original-host", "x-original-host", "x-host",
		"x-scheme", "x-url-scheme", "front-end-https",
	}
)

// removeClientHeaders deletes every forged identity or routing header, in
// every spelling, from the request as received; and, unless the peer is one
// of --trusted-proxies, every URL-rebuilding header (RH1).
func removeClientHeaders(h http.Header, fromTrustedProxy bool) {
	for name := range h {
		if forbiddenHeader(name) || (!fromTrustedProxy || strings.IndexByte(name, '_') >= 0) && urlRebuildingHeader(name) {
			delete(h, name)
		}
	}
}

// urlRebuildingHeader reports whether name is one of urlRebuildingHeaders
// in any spelling.
func urlRebuildingHeader(name string) bool {
	if name == "" {
		return false
	}
	if c := lowerASCII(name[0]); c != 'x' && c != 'f' {
		return false
	}
	for _, n := range urlRebuildingHeaders {
		if headerEqual(name, n) {
			return true
		}
	}
	return false
}

// peerTrusted reports whether r's TCP peer is one of --trusted-proxies.
func (p *Proxy) peerTrusted(r *http.Request) bool {
	return len(p.trusted) > 0 && p.trusted.Contains(web.PeerAddr(r.RemoteAddr))
}

func forbiddenHeader(name string) bool {
	if name == "" {
		return false
	}
	switch lowerASCII(name[0]) {
	case 'x', 'r', 'f': // every name in the lists starts with one of these
	default:
		return false
	}
	for _, n := range identityHeaders {
		if headerEqual(name, n) {
			return true
		}
	}
	for _, prefix := range identityPrefixes {
		if len(name) >= len(prefix) && headerEqual(name[:len(prefix)], prefix) {
			return true
		}
	}
	for _, n := range routingHeaders {
		if headerEqual(name, n) {
			return true
		}
	}
	if strings.IndexByte(name, '_') >= 0 {
		for _, n := range forwardingHeaders {
			if headerEqual(name, n) {
				return true
			}
		}
	}
	return false
}

// headerEqual compares a header name to a lower-case, dash-spelled name,
// ignoring case and reading "_" as "-". It does not allocate.
func headerEqual(name, want string) bool {
	if len(name) != len(want) {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := lowerASCII(name[i])
		if c == '_' {
			c = '-'
		}
		if c != want[i] {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// rewrite builds the upstream request (PX2, PX3, SS8): ReverseProxy's
// Rewrite. ReverseProxy calls it after removing hop-by-hop headers, so a
// "Connection: X-Forwarded-User" cannot remove what is set here, and after
// deleting the client's Forwarded and X-Forwarded-For/-Host/-Proto and the
// query parameters Go cannot parse.
func (f *forwarding) rewrite(pr *httputil.ProxyRequest) {
	p := f.p
	pr.SetURL(p.upstream)
	// Request trailers are not forwarded: the server fills them in once the
	// body is read, after every header check, so they could carry a forged
	// identity or the session cookie (PX1, SS8).
	pr.Out.Trailer = nil
	p.setUpstreamHeaders(pr.Out.Header, pr.In, f.identity())
}

// setUpstreamHeaders completes the upstream request's header out, a copy of
// in's without hop-by-hop headers and without the client's Forwarded and
// X-Forwarded-For/-Host/-Proto: Gatehouse's cookies go, the identity (none
// when id is nil) and the forwarding headers come.
func (p *Proxy) setUpstreamHeaders(out http.Header, in *http.Request, id *identity) {
	session.RemoveCookies(out, p.ownCookies...)

	// The values set below share one backing array: one allocation.
	values := new([7]string)
	set := func(i int, name, value string) {
		values[i] = value
		out[name] = values[i : i+1 : i+1]
	}
	if id != nil {
		if id.dropAuthorization {
			delete(out, "Authorization")
		}
		set(0, "X-Forwarded-User", id.userID)
		set(1, "X-Forwarded-Email", id.email)
		if id.groups != "" {
			set(5, "X-Forwarded-Groups", id.groups)
		}
		if id.assertion != "" {
			set(6, AssertionHeader, id.assertion)
		}
	}
	forwardedFor, trusted := p.forwardedFor(in)
	if forwardedFor != "" {
		set(2, "X-Forwarded-For", forwardedFor)
	}
	set(3, "X-Forwarded-Host", in.Host)
	set(4, "X-Forwarded-Proto", p.forwardedProto(in, trusted))
	// Set again from the inbound request when "Connection: X-Request-Id"
	// has removed it from the outbound one.
	if v, ok := in.Header[RequestIDHeader]; ok {
		if _, kept := out[RequestIDHeader]; !kept {
			out[RequestIDHeader] = v
		}
	}
	if trusted {
		if v := in.Header["Forwarded"]; len(v) > 0 {
			out["Forwarded"] = v
		}
	} else {
		delete(out, "X-Real-Ip")
	}
}

// forwardedFor is the X-Forwarded-For to send: the peer's address, or,
// when the peer is a trusted proxy, the chain it passed on from the first
// address it did not itself trust (web.TrustedProxies.Walk, the reading
// ClientIP makes too) followed by the peer. Hops left of that address are
// the client's own claims and dropped.
func (p *Proxy) forwardedFor(r *http.Request) (chain string, trusted bool) {
	var room [4]netip.Addr
	hops := room[:0] // nearest first
	peer, trusted := p.trusted.Walk(r, func(a netip.Addr) { hops = append(hops, a) })
	switch {
	case !peer.IsValid():
		return "", false
	case len(hops) == 0:
		return addrText(r.RemoteAddr, peer), trusted
	}
	b := make([]byte, 0, 16*(len(hops)+1))
	for i := len(hops) - 1; i >= 0; i-- {
		b = hops[i].AppendTo(b)
		b = append(b, ", "...)
	}
	return string(peer.AppendTo(b)), trusted
}

// forwardedProto is https when Gatehouse terminates TLS; behind a trusted
// proxy, that proxy's X-Forwarded-Proto when it says http or https.
func (p *Proxy) forwardedProto(r *http.Request, trusted bool) string {
	if p.proto == "https" || !trusted {
		return p.proto
	}
	switch v := r.Header.Get("X-Forwarded-Proto"); {
	case strings.EqualFold(v, "https"):
		return "https"
	case strings.EqualFold(v, "http"):
		return "http"
	}
	return p.proto
}

// addrText is the text of a, the address of remoteAddr: for the common
// "a.b.c.d:port", a piece of remoteAddr, which costs no allocation.
func addrText(remoteAddr string, a netip.Addr) string {
	if a.Is4() && !strings.HasPrefix(remoteAddr, "[") {
		if host, _, ok := strings.Cut(remoteAddr, ":"); ok {
			return host
		}
	}
	return a.String()
}
