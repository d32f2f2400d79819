package authflows

import (
	"net/url"
	"strings"
)

// localRedirect returns rd when it is a path on this site, and "/" otherwise
// (OA10). Accepted: "/x", "/x?y". Refused: "//x", "/\x", "/%09/x", "https:x",
// "javascript:x", "https://base@evil", anything with control characters or a
// scheme or host after parsing.
func localRedirect(rd string) string {
	if rd == "" || len(rd) > 2048 || rd[0] != '/' {
		return "/"
	}
	if len(rd) > 1 && (rd[1] == '/' || rd[1] == '\\') {
		return "/"
	}
	for i := 0; i < len(rd); i++ {
		if c := rd[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return "/"
		}
	}
	u, err := url.Parse(rd)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "/"
	}
	// Decoded, the path must still be local: "/%2f/evil" or "/%09/evil"
	// become "//evil" or "/\t/evil" in some browsers and servers.
	p := u.Path
	if strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\\t\r\n") || !strings.HasPrefix(p, "/") {
		return "/"
	}
	return rd
}
