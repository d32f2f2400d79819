package route

import (
	"errors"
	"fmt"
	"net"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-auth/gatehouse/proxy/policy"
)

// keyError is a bad value of one key of a rule.
type keyError struct {
	key string
	err error
}

func (e *keyError) Error() string { return e.key + ": " + e.err.Error() }
func (e *keyError) Unwrap() error { return e.err }

// compile checks and normalizes r in place and prepares it for matching.
// It may run again on a compiled rule. Its errors are *keyError.
func (r *Rule) compile() error {
	p, exact, err := parsePath(r.Path)
	if err != nil {
		return &keyError{"path", err}
	}
	r.prefix, r.exact = p, exact
	r.Methods, r.Groups = slices.Clone(r.Methods), slices.Clone(r.Groups) // normalized below, never in the caller's arrays
	if r.Methods != nil && len(r.Methods) == 0 {
		return &keyError{"methods", errors.New("an empty list matches no request; leave methods out for any method")}
	}
	for i, m := range r.Methods {
		if r.Methods[i], err = ParseMethod(m); err != nil {
			return &keyError{"methods", err}
		}
	}
	if r.Host != "" {
		if r.Host, err = ParseHost(r.Host); err != nil {
			return &keyError{"host", err}
		}
	}
	if r.Allow > Deny {
		return &keyError{"allow", fmt.Errorf("unknown value %d", r.Allow)}
	}
	if r.Groups != nil && len(r.Groups) == 0 {
		return &keyError{"groups", errors.New("an empty list lets nobody in; use allow: deny, or leave groups out")}
	}
	for i, g := range r.Groups {
		if r.Groups[i], err = ParseGroup(g); err != nil {
			return &keyError{"groups", err}
		}
	}
	if r.MaxAge < 0 {
		return &keyError{"max-age", fmt.Errorf("%v must be positive", r.MaxAge)}
	}
	if key := r.conflict(); key != "" {
		return &keyError{key, fmt.Errorf("only an allow: authenticated rule takes %s; this one is allow: %s", key, r.Allow)}
	}
	r.strict = r.Restricts()
	return nil
}

// conflict names the first key that an allow: public or deny rule cannot
// take (they apply to everyone, so a session's groups, factors, age or
// tokens cannot matter), or "".
func (r *Rule) conflict() string {
	if r.Allow == Authenticated {
		return ""
	}
	switch {
	case len(r.Groups) > 0:
		return "groups"
	case r.SecondFactor:
		return "second-factor"
	case r.MaxAge > 0:
		return "max-age"
	case r.Tokens:
		return "tokens"
	}
	return ""
}

// parsePath checks a rule's path ("/static/", "=/healthz") and returns what
// Match compares: for a prefix the path without its trailing "/" ("/" for
// the root), for an exact path the path itself.
func parsePath(s string) (p string, exact bool, err error) {
	if s == "" {
		return "", false, errors.New("is empty")
	}
	p, exact = strings.CutPrefix(s, "=")
	if !strings.HasPrefix(p, "/") {
		return "", false, fmt.Errorf("%q must start with / (or =/ for an exact path)", s)
	}
	if err := checkRulePath(p); err != nil {
		return "", false, fmt.Errorf("%q %w", s, err)
	}
	if strings.Contains(p, "*") {
		return "", false, fmt.Errorf("%q: a path is a prefix, not a pattern: write %q to cover everything below it", s, strings.TrimRight(strings.TrimSuffix(p, "*"), "/")+"/")
	}
	if !exact && p != "/" {
		p = strings.TrimSuffix(p, "/")
	}
	return p, exact, nil
}

// ParsePublicPath checks a --public-path value and returns it cleaned
// without a trailing slash: an absolute, plain, clean path outside /auth/.
func ParsePublicPath(s string) (string, error) {
	if !strings.HasPrefix(s, "/") {
		return "", fmt.Errorf("%q must start with / and lie outside /auth/", s)
	}
	if err := checkPlainPath(s); err != nil {
		return "", fmt.Errorf("%q %w", s, err)
	}
	return path.Clean(s), nil
}

// checkRulePath is checkPlainPath and, for a rule's path, no control
// byte, invalid UTF-8 or percent escape either: a rule is compared with the
// decoded path, so "%2F" in it could never match what it seems to name.
func checkRulePath(p string) error {
	if !utf8.ValidString(p) || strings.IndexFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return errors.New("holds a control character or invalid UTF-8")
	}
	for i := 0; i+2 < len(p); i++ {
		if p[i] == '%' && isHex(p[i+1]) && isHex(p[i+2]) {
			return fmt.Errorf("holds the escape %s: rules see the decoded path, write the character itself", p[i:i+3])
		}
	}
	return checkPlainPath(p)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// checkPlainPath refuses what the decoded, cleaned path a request is
// matched with cannot hold or should not be given: query and fragment
// syntax, path parameters and backslashes, dot segments and empty
// segments (they clean to another, wider path), and /auth/, which
// Gatehouse answers itself.
func checkPlainPath(p string) error {
	if strings.ContainsAny(p, "?#\\;") {
		return errors.New("must be a plain path, without ?, #, \\ or ; (rules see the path the upstream gets, never the query)")
	}
	trimmed := p
	if len(trimmed) > 1 {
		trimmed = strings.TrimSuffix(trimmed, "/")
	}
	clean := path.Clean(p)
	if clean != trimmed || strings.Contains(p, "//") {
		return fmt.Errorf("is not a clean path (it reads as %q: no \"..\", \".\" or \"//\"); give that if you mean it", clean)
	}
	if clean == "/auth" || strings.HasPrefix(clean, "/auth/") {
		return errors.New("lies under /auth/, which Gatehouse answers itself: no rule applies there")
	}
	return nil
}

// ParseMethod checks an HTTP method name (an RFC 9110 token) and returns
// it upper case.
func ParseMethod(s string) (string, error) {
	if s == "" {
		return "", errors.New("an empty method")
	}
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return "", fmt.Errorf("%q is not a method name", s)
		}
	}
	return strings.ToUpper(s), nil
}

func isTokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// ParseHost checks a rule's host (a DNS name or an IP address, without
// port) and returns it lower case without trailing dot; an IPv6 address
// loses its brackets.
func ParseHost(s string) (string, error) {
	h := strings.TrimSuffix(strings.ToLower(s), ".")
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	if net.ParseIP(h) != nil {
		return h, nil
	}
	if _, port, err := net.SplitHostPort(s); err == nil {
		return "", fmt.Errorf("%q: give the host without the port (:%s); ports are not compared", s, port)
	}
	if h == "" || len(h) > 253 || strings.HasPrefix(h, ".") || strings.Contains(h, "..") {
		return "", fmt.Errorf("%q is not a host name", s)
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_') {
			return "", fmt.Errorf("%q is not a host name (letters, digits, - and . only; write an international name in its xn-- form)", s)
		}
	}
	return h, nil
}

// ParseGroup checks a rule's group, "prefix:name" (github:ORG,
// github:ORG/TEAM, google:HOSTED-DOMAIN, oidc:GROUP), and returns it as
// sessions carry it: github and google names lower case, oidc as written.
func ParseGroup(s string) (string, error) {
	prefix, name, ok := strings.Cut(s, ":")
	if !ok || prefix == "" || name == "" {
		return "", fmt.Errorf("%q: want prefix:name, such as github:corp, github:corp/ops, google:corp.com or oidc:admins", s)
	}
	prefix = strings.ToLower(prefix)
	var err error
	switch prefix + ":" {
	case policy.GitHubPrefix:
		if strings.Contains(name, "/") {
			name, err = policy.ParseGitHubTeam(name)
		} else {
			name, err = policy.ParseGitHubOrg(name)
		}
	case policy.GooglePrefix:
		name, err = policy.ParseHostedDomain(name)
	case policy.OIDCPrefix:
		name, err = policy.ParseGroup(name)
	default:
		return "", fmt.Errorf("%q: unknown group prefix %q; want %s, %s or %s", s, prefix+":", policy.GitHubPrefix, policy.GooglePrefix, policy.OIDCPrefix)
	}
	if err != nil {
		return "", err
	}
	return prefix + ":" + name, nil
}

// ParseSecondFactor reads second-factor: "required" or "optional".
func ParseSecondFactor(s string) (bool, error) {
	switch s {
	case "required":
		return true, nil
	case "optional":
		return false, nil
	}
	return false, fmt.Errorf("%q: want required (or optional, the same as leaving it out)", s)
}

// ParseMaxAge reads max-age: a positive Go duration ("15m", "12h").
func ParseMaxAge(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 15m or 12h", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q must be positive", s)
	}
	return d, nil
}

// ParseAllow reads allow: public, authenticated or deny.
func ParseAllow(s string) (Allow, error) {
	for _, a := range []Allow{Public, Authenticated, Deny} {
		if s == a.String() {
			return a, nil
		}
	}
	return 0, fmt.Errorf("%q: want public, authenticated or deny", s)
}
