package route

import "strings"

// matchesPath reports whether the cleaned path p is the rule's path or,
// for a prefix, lies below it at a segment boundary. A restricting rule
// compares loosely (see Table.Match); params tells whether p holds a ";".
func (r *Rule) matchesPath(p string, params bool) bool {
	if r.prefix == "/" && !r.exact {
		return true
	}
	switch {
	case r.strict && params:
		return looseUnder(p, r.prefix, r.exact)
	case r.strict:
		n := len(r.prefix)
		if len(p) < n || !equalFoldASCII(p[:n], r.prefix) {
			return false
		}
		if r.exact { // loosely, "/metrics/" is "=/metrics" too
			return len(p) == n || len(p) == n+1 && p[n] == '/'
		}
		return boundary(p, n, false)
	}
	return strings.HasPrefix(p, r.prefix) && boundary(p, len(r.prefix), r.exact)
}

// boundary reports whether p, whose first n bytes matched, ends there or,
// unless exact, goes on with a new segment.
func boundary(p string, n int, exact bool) bool {
	return len(p) == n || !exact && p[n] == '/'
}

// matchesMethod compares upper case. A rule that restricts and lists GET
// also holds HEAD: upstreams answer HEAD with their GET handler, so a HEAD
// would run what the rule keeps from the user and read its headers.
func (r *Rule) matchesMethod(method string) bool {
	if len(r.Methods) == 0 {
		return true
	}
	head := r.strict && equalFoldASCII(method, "HEAD")
	for _, m := range r.Methods {
		if equalFoldASCII(m, method) || head && m == "GET" {
			return true
		}
	}
	return false
}

// matchesHost compares with host already made bare (bareHost). A
// malformed host (see wellFormedHost) could be read by the app as any
// host: a rule of a host holds it when the rule restricts, never when it
// lets through.
func (r *Rule) matchesHost(host string, malformed bool) bool {
	if r.Host == "" {
		return true
	}
	if malformed {
		return r.strict
	}
	return equalFoldASCII(r.Host, host)
}

// wellFormedHost reports whether h (a Host header, or the forwarded host)
// is one name or address and an optional port, which bareHost reads the
// one way an app does: dot-separated labels of letters, digits, "-" and
// "_" with at most one trailing dot, or an IPv6 address in brackets; then
// ":" and digits, or nothing. The empty host (HTTP/1.0) names no host and
// counts as well formed. It does not allocate.
func wellFormedHost(h string) bool {
	name, port := h, ""
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return false
		}
		for i := 1; i < end; i++ {
			if c := h[i]; !(isHexDigit(c) || c == ':' || c == '.') {
				return false
			}
		}
		if rest := h[end+1:]; rest != "" {
			if rest[0] != ':' {
				return false
			}
			port = rest[1:]
			if port == "" {
				return false
			}
		}
		name = ""
	} else if colon := strings.IndexByte(h, ':'); colon >= 0 {
		name, port = h[:colon], h[colon+1:]
		if port == "" {
			return false
		}
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return false
		}
	}
	name = strings.TrimSuffix(name, ".")
	label := 0
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '.':
			if label == 0 {
				return false // an empty label: "..", or a leading "."
			}
			label = 0
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_':
			label++
		default:
			return false
		}
	}
	return label > 0 || name == "" && (h == "" || strings.HasPrefix(h, "["))
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// looseUnder reports whether p, read segment by segment with each
// segment's ";parameters" dropped, empty segments skipped and ASCII case
// folded, equals prefix (a clean path without trailing slash, no ";") or,
// unless exact, lies below it. "/ADMIN;x=1/y" is under "/admin".
func looseUnder(p, prefix string, exact bool) bool {
	pi, qi := 0, 0
	for {
		want, qnext := nextSegment(prefix, qi)
		got, pnext := nextSegment(p, pi)
		if want == "" && qnext >= len(prefix) { // the prefix is used up
			return !exact || got == "" && pnext >= len(p)
		}
		if !equalFoldASCII(got, want) {
			return false
		}
		pi, qi = pnext, qnext
	}
}

// nextSegment returns the first non-empty segment of s at or after i,
// without its ";parameters", and the index after it; ("", len(s)) when
// none is left.
func nextSegment(s string, i int) (string, int) {
	for i < len(s) {
		if s[i] == '/' {
			i++
			continue
		}
		end := i
		for end < len(s) && s[end] != '/' {
			end++
		}
		segment := s[i:end]
		if semi := strings.IndexByte(segment, ';'); semi >= 0 {
			segment = segment[:semi]
		}
		if segment != "" {
			return segment, end
		}
		i = end
	}
	return "", len(s)
}

// bareHost is a Host header's name without port and trailing dot:
// "Admin.Example.com.:8443" is "Admin.Example.com", "[::1]:80" is "::1".
// Case is left to equalFoldASCII.
func bareHost(h string) string {
	if strings.HasPrefix(h, "[") {
		if end := strings.IndexByte(h, ']'); end > 0 {
			return h[1:end]
		}
		return h
	}
	if colon := strings.IndexByte(h, ':'); colon >= 0 && colon == strings.LastIndexByte(h, ':') {
		h = h[:colon]
	}
	return strings.TrimSuffix(h, ".")
}

// isClean reports whether p is a cleaned absolute path: a leading "/", no
// empty segment ("//") and no "." or ".." segment. A trailing "/" is clean.
func isClean(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		rest := p[i+1:]
		switch {
		case rest == "":
		case rest[0] == '/':
			return false
		case rest[0] == '.':
			if len(rest) == 1 || rest[1] == '/' || rest[1] == '.' && (len(rest) == 2 || rest[2] == '/') {
				return false
			}
		}
	}
	return true
}

// equalFoldASCII is strings.EqualFold for ASCII letters only: "K" (U+212A
// KELVIN SIGN) is not "k" here, as it is not to the upstreams that route
// by host.
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
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
