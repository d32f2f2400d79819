package main

import (
	"net"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// checkIdentityFlags checks the flags of the signed identity assertion and
// of forward-auth (contract, v2).
func checkIdentityFlags(r *rawFlags, c *Config) error {
	if c.AssertionAudience == "" {
		c.AssertionAudience = c.BaseURL.String()
	}
	if strings.ContainsAny(c.AssertionAudience, " \t\r\n") {
		return flagError("assertion-audience", "%q must not contain whitespace", c.AssertionAudience)
	}
	if c.AssertionTTL < 10*time.Second || c.AssertionTTL > 24*time.Hour {
		return flagError("assertion-ttl", "%s: want 10s to 24h", c.AssertionTTL)
	}
	var err error
	if c.ForwardAuthTrusted, err = web.ParseTrustedProxies(r.forwardAuthTrusted); err != nil {
		return flagError("forward-auth-trusted", "%v", err)
	}
	host := strings.ToLower(c.BaseURL.Hostname())
	if c.CookieDomain != "" {
		d := strings.ToLower(strings.TrimPrefix(c.CookieDomain, "."))
		if !validHostName(d) || !strings.Contains(d, ".") {
			return flagError("cookie-domain", "%q is not a domain name", c.CookieDomain)
		}
		if host != d && !strings.HasSuffix(host, "."+d) {
			return flagError("cookie-domain", "%q does not contain the --base-url host %s", c.CookieDomain, host)
		}
		c.CookieDomain = d
	}
	for i, h := range c.AllowedRedirectHosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if !validHostName(h) {
			return flagError("allowed-redirect-host", "%q is not a host name", h)
		}
		if c.CookieDomain == "" || (h != c.CookieDomain && !strings.HasSuffix(h, "."+c.CookieDomain)) {
			return flagError("allowed-redirect-host", "%q must lie under --cookie-domain (the session cookie would not reach it)", h)
		}
		c.AllowedRedirectHosts[i] = h
	}
	return nil
}

// validHostName accepts a DNS name (letters, digits, "-", ".") without a
// port; IP addresses are not names a cookie domain can cover.
func validHostName(h string) bool {
	if h == "" || len(h) > 253 || net.ParseIP(h) != nil || h[0] == '.' || h[len(h)-1] == '.' || strings.Contains(h, "..") {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
