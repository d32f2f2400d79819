package authflows

import (
	"net/url"
	"strings"
)

// redirectTarget is where a finished sign-in goes: rd when it is a local
// path (localRedirect, OA10) or an absolute URL that absoluteRedirect
// accepts (forward-auth sends users back to the app's own host), else "/".
func (h *core) redirectTarget(rd string) string {
	if rd == "" || rd[0] == '/' {
		return localRedirect(rd)
	}
	return absoluteRedirect(rd, h.cfg.BaseURL, h.cfg.AllowedRedirectHosts)
}

// absoluteRedirect returns rd when it is an absolute URL whose scheme is
// https (or http when base is http) and whose host is base's or one of
// allowed (any port); otherwise "/". User info, an opaque form, control
// characters, backslashes and anything that does not parse are refused.
func absoluteRedirect(rd string, base *url.URL, allowed []string) string {
	if len(rd) > 2048 || strings.ContainsAny(rd, "\\") {
		return "/"
	}
	for i := 0; i < len(rd); i++ {
		if c := rd[i]; c <= ' ' || c == 0x7f {
			return "/"
		}
	}
	u, err := url.Parse(rd)
	if err != nil || u.User != nil || u.Opaque != "" || u.Host == "" {
		return "/"
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && base.Scheme == "http":
	default:
		return "/"
	}
	if u.Path != "" && u.Path[0] != '/' {
		return "/"
	}
	if strings.EqualFold(u.Host, base.Host) {
		return rd
	}
	host := strings.ToLower(u.Hostname())
	for _, a := range allowed {
		if host == a {
			return rd
		}
	}
	return "/"
}
