package proxy

import (
	"fmt"
	"net/http"
	"path"
	"strings"
)

// The path rules (PX5).
//
// The decision is made on r.URL.Path, the percent-decoded path, cleaned once
// with path.Clean semantics: "..", ".", and repeated slashes are resolved,
// so "%2e%2e" and "//" count as what they decode to. An encoded slash
// ("%2f") decodes to "/" like any other: "/x/..%2fy" is "/x/../y", which
// is "/y". A trailing slash is kept ("/docs/" stays "/docs/") because
// upstreams tell directories from files by it.
//
// The forwarded request carries exactly that cleaned path, re-encoded
// canonically (RawPath and an opaque request target are dropped), so the
// upstream never sees a path other than the one decided on. Apps that
// depend on "%2f" inside a segment see "/" there instead.
//
// X-Forwarded-Uri, X-Original-URL and the like are never read (PX4); the
// client's copies are removed (see headers.go).

// cleanPath returns the canonical form of a decoded request path.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	cleaned := path.Clean(p)
	if p[len(p)-1] == '/' && cleaned != "/" {
		if len(p) == len(cleaned)+1 && strings.HasPrefix(p, cleaned) {
			return p // already clean, no allocation
		}
		cleaned += "/"
	}
	return cleaned
}

// withCleanPath returns r, or a copy of r when its URL is not already in
// the canonical form, whose URL carries only the cleaned path.
func withCleanPath(r *http.Request) *http.Request {
	cleaned := cleanPath(r.URL.Path)
	if cleaned == r.URL.Path && r.URL.RawPath == "" && r.URL.Opaque == "" {
		return r
	}
	u := *r.URL
	u.Path, u.RawPath, u.Opaque = cleaned, "", ""
	r2 := new(http.Request)
	*r2 = *r
	r2.URL = &u
	r2.RequestURI = u.RequestURI()
	return r2
}

// isAuthPath reports whether a cleaned path belongs to the auth handler.
func isAuthPath(p string) bool {
	return p == "/auth" || strings.HasPrefix(p, "/auth/")
}

// publicPaths are the cleaned --public-path prefixes, without trailing slash.
type publicPaths []string

func parsePublicPaths(list []string) (publicPaths, error) {
	var out publicPaths
	for _, raw := range list {
		p := strings.TrimSpace(raw)
		if p == "" {
			continue
		}
		if p[0] != '/' || strings.ContainsAny(p, "?#\\;") {
			return nil, fmt.Errorf("proxy: public path %q must be a plain absolute path", raw)
		}
		p = path.Clean(p)
		if isAuthPath(p) {
			return nil, fmt.Errorf("proxy: public path %q is under /auth/, which Gatehouse serves itself", raw)
		}
		out = append(out, p)
	}
	return out, nil
}

// match reports whether the cleaned path is public: equal to a prefix or
// below it at a segment boundary ("/static" matches "/static/x", not
// "/staticky"). Only the path counts, never the query.
//
// A path that some upstreams would read as climbing out of its directory
// is never public: a backslash (IIS, some frameworks read it as "/") or a
// "." or ".." segment carrying ";params" (Tomcat reads "..;" as "..").
// A control byte (NUL, CR, TAB, DEL, …) anywhere in the decoded path makes
// it ambiguous too: upstreams that cut the path at a NUL or drop control
// bytes would read "..\x00" as ".." and climb out of the public prefix.
// Such requests need a session like any protected path.
func (pp publicPaths) match(p string) bool {
	for _, prefix := range pp {
		if prefix == "/" || p == prefix ||
			(len(p) > len(prefix) && p[len(prefix)] == '/' && strings.HasPrefix(p, prefix)) {
			return !ambiguous(p)
		}
	}
	return false
}

func ambiguous(p string) bool {
	if strings.IndexByte(p, '\\') >= 0 || hasControlByte(p) {
		return true
	}
	if strings.IndexByte(p, ';') < 0 {
		return false
	}
	for segment := range strings.SplitSeq(p, "/") {
		segment, _, _ = strings.Cut(segment, ";")
		if segment == "." || segment == ".." {
			return true
		}
	}
	return false
}

// hasControlByte reports whether p holds an ASCII control byte or DEL.
func hasControlByte(p string) bool {
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}
