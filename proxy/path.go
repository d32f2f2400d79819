package proxy

import (
	"net/http"
	"path"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
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

// ambiguous reports whether an upstream could read the decoded, cleaned
// path p as another path than Gatehouse does, one step up or more:
//   - a backslash (IIS and some frameworks read it as "/");
//   - a control byte (some drop NUL, CR, LF or trim tabs: ".%00." is "..");
//   - an escape left after the one decoding ("%2e", "%2f", "%5c", "%25",
//     "%3b", a control): an upstream that decodes again reads "..%2f" as
//     "../" and "..%3b" as Tomcat's "..;";
//   - bytes that are not UTF-8 (an overlong "\xc0\xae" is "." to a lenient
//     decoder);
//   - a character that NFKC folds into path syntax ".", "/", "\", "%" or
//     ";": the full-width forms (U+FF0E, U+FF0F, U+FF3C), but also the dot
//     leaders U+2024 and U+2025, the ellipsis U+2026 and the small forms
//     \uFE52 and \uFE68, and any other that Unicode may add; or a path
//     whose NFKC form is ambiguous by these rules ("..", U+3000: ".. ");
//   - a "." or ".." segment carrying ";params" (Tomcat reads "..;" as "..");
//   - a segment of dots and spaces other than "." and ".." (Spring and
//     Windows trim spaces, Windows reads "..." as "..").
//
// It runs for every request's path (the proxy's, and the check endpoints'
// before and after cleaning) and allocates only for a path with a
// character that NFKC changes.
func ambiguous(p string) bool {
	semicolon, nonASCII := false, false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c < 0x20 || c == 0x7f || c == '\\':
			return true
		case c == ';':
			semicolon = true
		case c == '%':
			if i+2 < len(p) && ishex(p[i+1]) && ishex(p[i+2]) {
				switch b := unhex(p[i+1])<<4 | unhex(p[i+2]); {
				case b == '.' || b == '/' || b == '\\' || b == '%' || b == ';' || b < 0x20 || b == 0x7f:
					return true
				}
			}
		case c >= utf8.RuneSelf:
			nonASCII = true
		}
	}
	if nonASCII && (!utf8.ValidString(p) || foldsIntoSyntax(p)) {
		return true
	}
	for segment := range strings.SplitSeq(p, "/") {
		if semicolon {
			segment, _, _ = strings.Cut(segment, ";")
		}
		if dotsAndSpaces(segment) {
			return true
		}
	}
	return false
}

// foldsIntoSyntax reports whether NFKC, which some upstreams apply to the
// path, turns p into a path read another way: a character of p becomes one
// of ". / \\ % ;" (the folded path holds more of them than p does), or the
// folded path is ambiguous itself (an ideographic or no-break space beside
// dots folds to ".. ", which Windows and Spring trim to "..").
func foldsIntoSyntax(p string) bool {
	if norm.NFKC.IsNormalString(p) {
		return false
	}
	const syntax = "./\\%;"
	folded := norm.NFKC.String(p)
	for i := range len(syntax) {
		if strings.Count(folded, syntax[i:i+1]) != strings.Count(p, syntax[i:i+1]) {
			return true
		}
	}
	return ambiguous(folded) // folded is NFKC: no deeper than this
}

// dotsAndSpaces reports whether segment is made of dots and spaces only,
// with a dot in it: ".", "..", "...", ".. ", " ..".
func dotsAndSpaces(segment string) bool {
	dot := false
	for i := 0; i < len(segment); i++ {
		switch segment[i] {
		case '.':
			dot = true
		case ' ':
		default:
			return false
		}
	}
	return dot
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
