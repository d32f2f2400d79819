// Package route decides what a request path needs: the route rules of the
// configuration file ("routes:") and --public-path, compiled into a Table
// that the proxy and the forward-auth check endpoints consult on every
// request with the host, the method and the cleaned path.
//
// Rules are tried in order and the first whose path, methods and host all
// match decides; no match is the default rule (authenticated, nothing
// else). --public-path P is a public rule placed before the file's rules.
// The package is pure: no I/O, no clock, no logging, and Match does not
// allocate.
//
// Dependencies: route imports the standard library, go.yaml.in/yaml/v3
// (Parse reads the "routes:" node, whose lines its errors name) and
// proxy/policy (group names are checked and normalized as the policy does).
// proxy and cmd/gatehouse import it.
package route

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// Allow is what a rule lets through.
type Allow uint8

// The outcomes of a rule. The zero Allow is Authenticated, the default.
const (
	// Authenticated: a valid session that passes the access policy, then
	// the rule's groups, second factor and max-age.
	Authenticated Allow = iota
	// Public: forwarded without a session (with the identity headers
	// when a valid session is present).
	Public
	// Deny: refused for everyone (403 route_denied).
	Deny
)

// String is the configuration file's word for a.
func (a Allow) String() string {
	switch a {
	case Public:
		return "public"
	case Deny:
		return "deny"
	}
	return "authenticated"
}

// Rule is one route rule. Build rules with Parse (from the configuration
// file) or as literals given to NewTable, which checks and normalizes them.
type Rule struct {
	// Path is a prefix at a segment boundary ("/static/" and "/static"
	// both match "/static", "/static/" and "/static/x", never
	// "/staticky"), or with a leading "=" an exact path ("=/healthz"
	// matches "/healthz" only). It is compared with the cleaned, decoded
	// path the proxy forwards; see Table.Match for case.
	Path string
	// Methods, upper case; empty: any method.
	Methods []string
	// Host, lower case, without port or trailing dot; empty: any host.
	Host  string
	Allow Allow
	// Groups: a session needs one of them ("github:corp/ops",
	// "oidc:admins"); empty: none needed.
	Groups []string
	// SecondFactor: the session must have been made with two factors.
	SecondFactor bool
	// MaxAge, when positive: the sign-in must be no older than this.
	MaxAge time.Duration
	// Tokens: Authorization: Bearer credentials are accepted here.
	Tokens bool
	// Source tells where the rule comes from ("gatehouse.yaml:12",
	// "--public-path"), for errors, logs and `gatehouse config check`.
	Source string

	prefix string // Path without "=" and, for a prefix, without the trailing "/"
	exact  bool
	// strict: the rule restricts more than the default rule does (deny,
	// groups, second factor, max-age); see Table.Match.
	strict bool
}

// Restricts reports whether the rule asks more than the default rule: it
// denies, or needs groups, a second factor or a recent sign-in.
func (r Rule) Restricts() bool {
	return r.Allow == Deny || len(r.Groups) > 0 || r.SecondFactor || r.MaxAge > 0
}

// GroupsPass reports whether a session with groups (comma-separated, as in
// Session.Groups and X-Forwarded-Groups) satisfies the rule's groups: any
// one of them, or none needed. It does not allocate.
func (r Rule) GroupsPass(groups string) bool {
	if len(r.Groups) == 0 {
		return true
	}
	for groups != "" {
		var g string
		g, groups, _ = strings.Cut(groups, ",")
		for _, want := range r.Groups {
			if g == want {
				return true
			}
		}
	}
	return false
}

// String is the rule in the configuration file's words, on one line.
func (r Rule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "path: %s", r.Path)
	if len(r.Methods) > 0 {
		fmt.Fprintf(&b, ", methods: [%s]", strings.Join(r.Methods, ", "))
	}
	if r.Host != "" {
		fmt.Fprintf(&b, ", host: %s", r.Host)
	}
	fmt.Fprintf(&b, ", allow: %s", r.Allow)
	if len(r.Groups) > 0 {
		fmt.Fprintf(&b, ", groups: [%s]", strings.Join(r.Groups, ", "))
	}
	if r.SecondFactor {
		b.WriteString(", second-factor: required")
	}
	if r.MaxAge > 0 {
		fmt.Fprintf(&b, ", max-age: %s", r.MaxAge)
	}
	if r.Tokens {
		b.WriteString(", tokens: true")
	}
	return b.String()
}

// Table is a checked, ordered rule set. It is immutable, so one Table may
// serve any number of requests at once; a reload builds a new one. The
// nil *Table has no rules: everything gets the default rule.
type Table struct {
	rules   []Rule
	anyHost bool // some rule names a host: Match normalizes the request's
}

// NewTable checks rules and builds the table: first a public rule for each
// of publicPaths (--public-path, in order), then rules. A bad path or rule
// is an error naming it (with its Source when set).
func NewTable(publicPaths []string, rules []Rule) (*Table, error) {
	t := &Table{}
	for _, p := range publicPaths {
		clean, err := ParsePublicPath(p)
		if err != nil {
			return nil, err
		}
		r := Rule{Path: clean, Allow: Public, Source: "--public-path"}
		if err := r.compile(); err != nil {
			return nil, err
		}
		t.rules = append(t.rules, r)
	}
	for _, r := range rules {
		if err := r.compile(); err != nil {
			if r.Source != "" {
				return nil, fmt.Errorf("%s: %w", r.Source, err)
			}
			return nil, err
		}
		t.rules = append(t.rules, r)
		t.anyHost = t.anyHost || r.Host != ""
	}
	return t, nil
}

// Rules returns a copy of the table's rules in order, the public paths
// first.
func (t *Table) Rules() []Rule {
	if t == nil {
		return nil
	}
	return append([]Rule(nil), t.rules...)
}

// Default is the rule of a request no rule matches: authenticated, nothing
// else.
func Default() Rule { return Rule{Allow: Authenticated, Source: "default"} }

// Match returns the first rule whose path, methods and host match the
// request, or Default. It does not allocate.
//
// path must be the cleaned, decoded path the proxy forwards (never the
// raw or encoded form, the query or the fragment); a path that is not
// clean ("//", "." or ".." segments, no leading "/") is answered as
// MatchAmbiguous answers, so a caller that forgets to clean fails closed.
// The caller also sends a path the proxy finds ambiguous (a backslash,
// "..;", a leftover escape: an upstream could read another path into it)
// to MatchAmbiguous instead.
//
// host is the request's Host (the forwarded host on the check endpoints):
// compared without port and trailing dot, ASCII case-insensitively. A host
// that is not one name and an optional port ("a.example.com:80:80",
// "a.example.com..") may be read by the app as any host: the rules of a
// host that restrict hold it, those that let through do not. method
// is compared upper case; a restricting rule that lists GET also holds
// HEAD.
//
// Case: a path is compared case-sensitively, as the upstream receives it,
// for rules that let through (public, tokens) or ask nothing more than
// the default: "/Static/x" is not under "/static/". A rule that restricts
// (deny, groups, second-factor, max-age) also matches other spellings of
// the case and segments carrying ";parameters" ("/ADMIN/x" and
// "/admin;jsessionid=1/x" are under "/admin/"), so that an app that ignores
// case or drops path parameters cannot be reached around it.
func (t *Table) Match(host, method, path string) Rule {
	if !isClean(path) {
		return t.MatchAmbiguous(host, method)
	}
	if t == nil {
		return Default()
	}
	malformed := false
	if t.anyHost {
		malformed = !wellFormedHost(host)
		host = bareHost(host)
	}
	params := strings.IndexByte(path, ';') >= 0
	for i := range t.rules {
		r := &t.rules[i]
		if r.matchesPath(path, params) && r.matchesMethod(method) && r.matchesHost(host, malformed) {
			return *r
		}
	}
	return Default()
}

// MatchAmbiguous is the rule for a path the proxy finds ambiguous: one an
// upstream may read as another path, which no rule can be chosen for. When
// any rule of this host and method restricts (deny, groups, second factor,
// max-age), the request is denied, since the upstream may read the path as
// one under that rule; otherwise it gets the default rule (never public,
// as v2 kept --public-path). It does not allocate.
func (t *Table) MatchAmbiguous(host, method string) Rule {
	if t == nil {
		return Default()
	}
	malformed := false
	if t.anyHost {
		malformed = !wellFormedHost(host)
		host = bareHost(host)
	}
	for i := range t.rules {
		r := &t.rules[i]
		if r.strict && r.matchesMethod(method) && r.matchesHost(host, malformed) {
			return Rule{Allow: Deny, Source: "ambiguous path"}
		}
	}
	return Default()
}

// Live is the table in force: the proxy reads it on every request without
// a lock, a reload replaces it as a whole. The zero Live holds no table
// (everything gets the default rule).
type Live struct {
	table atomic.Pointer[Table]
}

// Rules returns the table in force (nil, a table without rules, until
// Store).
func (l *Live) Rules() *Table {
	if l == nil {
		return nil
	}
	return l.table.Load()
}

// Store puts t in force for the next request.
func (l *Live) Store(t *Table) { l.table.Store(t) }
