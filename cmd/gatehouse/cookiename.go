package main

import (
	"strings"

	"github.com/spf13/pflag"
)

// hostCookiePrefix makes a browser keep a cookie only when it was set by the
// host itself, over https, with Path=/ and no Domain: a sibling or parent
// domain (or a plain-http page of the same host) cannot plant or shadow a
// session cookie of that name (cookie tossing).
const hostCookiePrefix = "__Host-"

// checkCookieName settles the session cookie's name after --base-url and
// --cookie-secure are known. With an https base URL, Secure cookies, no
// --cookie-name and no --cookie-domain (a __Host- cookie has no Domain), the
// name is __Host-gatehouse_session. A __Host- or __Secure- name without
// Secure, or a __Host- name with --cookie-domain, is refused: browsers would
// drop the cookie and nobody could sign in.
func checkCookieName(fs *pflag.FlagSet, c *Config) error {
	if c.CookieName == "" || strings.ContainsAny(c.CookieName, " ;,=\t\r\n\"") {
		return flagError("cookie-name", "%q is not a valid cookie name", c.CookieName)
	}
	if !fs.Changed("cookie-name") && c.CookieSecure && c.CookieDomain == "" && c.BaseURL != nil && c.BaseURL.Scheme == "https" {
		c.CookieName = hostCookiePrefix + c.CookieName
	}
	if !c.CookieSecure && (strings.HasPrefix(c.CookieName, hostCookiePrefix) || strings.HasPrefix(c.CookieName, "__Secure-")) {
		return flagError("cookie-name", "%q needs Secure cookies (an https --base-url or --cookie-secure)", c.CookieName)
	}
	if c.CookieDomain != "" && strings.HasPrefix(c.CookieName, hostCookiePrefix) {
		return flagError("cookie-name", "%q cannot have a Domain (--cookie-domain); use another name", c.CookieName)
	}
	return nil
}
