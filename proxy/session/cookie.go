package session

import (
	"net/http"
	"slices"
	"strings"
)

// cookieValue returns the value of the first cookie called name in the
// Cookie header(s), the only place a session id is read from (SS7). It
// parses only as far as needed and does not allocate.
func cookieValue(h http.Header, name string) string {
	for _, line := range h["Cookie"] {
		for len(line) > 0 {
			var part string
			part, line, _ = strings.Cut(line, ";")
			k, v, _ := strings.Cut(part, "=")
			if trimSpace(k) == name {
				v = trimSpace(v)
				if len(v) > 1 && v[0] == '"' && v[len(v)-1] == '"' {
					v = v[1 : len(v)-1]
				}
				return v
			}
		}
	}
	return ""
}

// RemoveCookies deletes every cookie called one of names from the Cookie
// header(s) of a request about to be forwarded, keeping the others as they
// were (SS8). Lines are edited in place: h must not share its value slices
// with a header that is still read (http.Header.Clone copies them).
func RemoveCookies(h http.Header, names ...string) {
	lines, ok := h["Cookie"]
	if !ok {
		return
	}
	kept := lines[:0]
	for _, line := range lines {
		if containsAny(line, names) {
			line = withoutCookies(line, names)
		}
		if line != "" {
			kept = append(kept, line)
		}
	}
	switch {
	case len(kept) == 0:
		delete(h, "Cookie")
	case len(kept) < len(lines): // else kept is lines, edited in place
		h["Cookie"] = kept
	}
}

func containsAny(line string, names []string) bool {
	for _, name := range names {
		if strings.Contains(line, name) {
			return true
		}
	}
	return false
}

// withoutCookies returns line without the cookies called one of names, the
// others joined by "; ". When they already stand that way in line (the
// removed cookie was the first or the last), the result is a piece of line
// and nothing is allocated.
func withoutCookies(line string, names []string) string {
	var b strings.Builder
	built := false
	start, end := 0, 0 // while !built, the result so far is line[start:end]
	for pos := 0; pos < len(line); {
		part, next := line[pos:], len(line)
		if i := strings.IndexByte(part, ';'); i >= 0 {
			part, next = part[:i], pos+i+1
		}
		k, _, _ := strings.Cut(part, "=")
		if kept := trimSpace(part); kept != "" && !slices.Contains(names, trimSpace(k)) {
			off := pos + strings.Index(part, kept)
			switch {
			case !built && start == end:
				start, end = off, off+len(kept)
			case !built && line[end:off] == "; ":
				end = off + len(kept)
			default:
				if !built {
					b.Grow(len(line))
					b.WriteString(line[start:end])
					built = true
				}
				b.WriteString("; ")
				b.WriteString(kept)
			}
		}
		pos = next
	}
	if built {
		return b.String()
	}
	return line[start:end]
}

// DropSetCookies removes, in place, the Set-Cookie lines of h that set a
// cookie called one of names, so that an answer passed on from elsewhere
// (the upstream's) can neither plant nor clear a Gatehouse cookie (SS8).
func DropSetCookies(h http.Header, names ...string) {
	lines, ok := h["Set-Cookie"]
	if !ok {
		return
	}
	kept := lines[:0]
	for _, line := range lines {
		if !slices.Contains(names, setCookieName(line)) {
			kept = append(kept, line)
		}
	}
	if len(kept) == 0 {
		delete(h, "Set-Cookie")
		return
	}
	h["Set-Cookie"] = kept
}

// setCookieName is the name a browser gives the cookie of a Set-Cookie line.
// A nameless cookie ("=a=b") is sent back as "a=b", so it counts as "a".
func setCookieName(line string) string {
	first, _, _ := strings.Cut(line, ";")
	name, value, _ := strings.Cut(first, "=")
	if name = trimSpace(name); name == "" {
		name, _, _ = strings.Cut(value, "=")
		name = trimSpace(name)
	}
	return name
}

// trimSpace removes the optional whitespace around cookie names and values:
// the bytes net/http trims there too (textproto.TrimString), so that both
// read the same names (found by FuzzSessionCookie).
func trimSpace(s string) string {
	for len(s) > 0 && isCookieSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isCookieSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

func isCookieSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
