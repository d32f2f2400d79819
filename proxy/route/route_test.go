package route

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func mustTable(t testing.TB, public []string, rules ...Rule) *Table {
	t.Helper()
	tab, err := NewTable(public, rules)
	if err != nil {
		t.Fatalf("NewTable: %v", err)
	}
	return tab
}

// request is one request and the Source of the rule that must decide it.
type request struct {
	host, method, path string
	want               string
}

func checkMatches(t *testing.T, tab *Table, reqs []request) {
	t.Helper()
	for _, rq := range reqs {
		if got := tab.Match(rq.host, rq.method, rq.path); got.Source != rq.want {
			t.Errorf("Match(%q, %q, %q) = rule %q (%s), want %q", rq.host, rq.method, rq.path, got.Source, got, rq.want)
		}
	}
}

func TestMatchPath(t *testing.T) {
	tab := mustTable(t, nil,
		Rule{Path: "/static/", Allow: Public, Source: "static"},
		Rule{Path: "=/healthz", Allow: Public, Source: "healthz"},
		Rule{Path: "/docs", Allow: Public, Source: "docs"},
		Rule{Path: "=/exact/", Allow: Public, Source: "exact-slash"},
	)
	checkMatches(t, tab, []request{
		// A prefix at a segment boundary, the trailing slash of the rule
		// or not: the directory itself, below it, never a longer name.
		{"", "GET", "/static", "static"},
		{"", "GET", "/static/", "static"},
		{"", "GET", "/static/x/y.css", "static"},
		{"", "GET", "/staticky", "default"},
		{"", "GET", "/static.css", "default"},
		{"", "GET", "/docs", "docs"},
		{"", "GET", "/docs/a", "docs"},
		{"", "GET", "/docsx", "default"},
		// Exact: that path only, not with a trailing slash, not below.
		{"", "GET", "/healthz", "healthz"},
		{"", "GET", "/healthz/", "default"},
		{"", "GET", "/healthz/x", "default"},
		{"", "GET", "/healthzz", "default"},
		{"", "GET", "/exact/", "exact-slash"},
		{"", "GET", "/exact", "default"},
		// Case: a public rule matches the path as the upstream gets it.
		{"", "GET", "/Static/x", "default"},
		{"", "GET", "/HEALTHZ", "default"},
		// Path parameters are not stripped for a public rule.
		{"", "GET", "/static;v=1/x", "default"},
		{"", "GET", "/", "default"},
	})
}

func TestMatchRoot(t *testing.T) {
	tab := mustTable(t, nil, Rule{Path: "=/", Allow: Public, Source: "home"}, Rule{Path: "/", Allow: Deny, Source: "rest"})
	checkMatches(t, tab, []request{
		{"", "GET", "/", "home"},
		{"", "GET", "/x", "rest"},
		{"", "GET", "/x/", "rest"},
	})
}

func TestMatchMethods(t *testing.T) {
	tab := mustTable(t, nil,
		Rule{Path: "/api/", Methods: []string{"get", "Head"}, Allow: Public, Source: "read"},
		Rule{Path: "/api/", Methods: []string{"DELETE"}, Allow: Deny, Source: "delete"},
	)
	checkMatches(t, tab, []request{
		{"", "GET", "/api/x", "read"},
		{"", "HEAD", "/api/x", "read"},
		{"", "get", "/api/x", "read"}, // compared upper case
		{"", "POST", "/api/x", "default"},
		{"", "DELETE", "/api/x", "delete"},
		{"", "delete", "/api/x", "delete"},
		{"", "OPTIONS", "/api/x", "default"},
	})
	if got := tab.Rules()[0].Methods; strings.Join(got, ",") != "GET,HEAD" {
		t.Errorf("methods kept as %q, want upper case", got)
	}
}

func TestMatchHost(t *testing.T) {
	tab := mustTable(t, nil,
		Rule{Path: "/", Host: "Admin.Example.com.", Groups: []string{"oidc:admins"}, Source: "admin"},
		Rule{Path: "/", Host: "[::1]", Allow: Deny, Source: "v6"},
		Rule{Path: "/", Host: "10.0.0.1", Allow: Deny, Source: "v4"},
	)
	if h := tab.Rules()[0].Host; h != "admin.example.com" {
		t.Errorf("host kept as %q, want lower case without the trailing dot", h)
	}
	checkMatches(t, tab, []request{
		{"admin.example.com", "GET", "/x", "admin"},
		{"ADMIN.EXAMPLE.COM", "GET", "/x", "admin"},
		{"Admin.Example.Com.", "GET", "/x", "admin"},
		{"admin.example.com:8443", "GET", "/x", "admin"},
		{"admin.example.com.:443", "GET", "/x", "admin"},
		{"app.example.com", "GET", "/x", "default"},
		{"admin.example.com.evil.test", "GET", "/x", "default"},
		{"xadmin.example.com", "GET", "/x", "default"},
		// Case folding is ASCII's: U+212A KELVIN SIGN is no "k"; a name
		// that is not ASCII is malformed, held by the host's restricting
		// rule (TestMatchMalformedHost).
		{"\u212Aadmin.example.com", "GET", "/x", "admin"},
		{"[::1]:8080", "GET", "/", "v6"},
		{"[::1]", "GET", "/", "v6"},
		{"10.0.0.1:80", "GET", "/", "v4"},
		{"", "GET", "/", "default"},
	})
}

// A rule that restricts (deny, groups, second factor, max-age) also
// matches other spellings of the case and path parameters, which
// case-insensitive upstreams and servlet containers read as the same path.
func TestMatchRestrictingRulesAreLoose(t *testing.T) {
	tab := mustTable(t, nil,
		Rule{Path: "/admin/", Groups: []string{"oidc:admins"}, Source: "admin"},
		Rule{Path: "=/metrics", Allow: Deny, Source: "metrics"},
		Rule{Path: "/pay/", SecondFactor: true, Source: "pay"},
		Rule{Path: "/Account/Settings", MaxAge: time.Minute, Source: "settings"},
		Rule{Path: "/public/", Allow: Public, Source: "public"},
	)
	checkMatches(t, tab, []request{
		{"", "GET", "/admin", "admin"},
		{"", "GET", "/admin/", "admin"},
		{"", "GET", "/ADMIN/x", "admin"},
		{"", "GET", "/Admin/x", "admin"},
		{"", "GET", "/admin;jsessionid=1/x", "admin"},
		{"", "GET", "/admin;/x", "admin"},
		{"", "GET", "/;x/admin/y", "admin"}, // a segment of parameters only counts as none
		{"", "GET", "/admins", "default"},
		{"", "GET", "/admin.php", "default"},
		{"", "GET", "/ad;x/min", "default"},
		{"", "GET", "/metrics", "metrics"},
		{"", "GET", "/METRICS", "metrics"},
		{"", "GET", "/metrics/", "metrics"},
		{"", "GET", "/metrics;x", "metrics"},
		{"", "GET", "/metrics/x", "default"},
		{"", "GET", "/PAY/now", "pay"},
		{"", "GET", "/account/settings/x", "settings"},
		{"", "GET", "/public/x", "public"},
		{"", "GET", "/PUBLIC/x", "default"},
	})
}

func TestFirstMatchWinsAndDefault(t *testing.T) {
	tab := mustTable(t, nil,
		Rule{Path: "/a/b/", Allow: Deny, Source: "first"},
		Rule{Path: "/a/", Allow: Public, Source: "second"},
		Rule{Path: "/a/b/c", Allow: Public, Source: "shadowed"},
	)
	checkMatches(t, tab, []request{
		{"", "GET", "/a/b/c", "first"},
		{"", "GET", "/a/x", "second"},
		{"", "GET", "/b", "default"},
	})
	d := tab.Match("", "GET", "/nothing")
	if d.Allow != Authenticated || len(d.Groups) != 0 || d.SecondFactor || d.MaxAge != 0 || d.Tokens || d.Restricts() {
		t.Errorf("default rule = %+v, want authenticated and nothing else", d)
	}
	var none *Table
	if got := none.Match("h", "GET", "/x"); got.Source != "default" {
		t.Errorf("nil table: %+v, want the default rule", got)
	}
}

// --public-path rules come before the file's, in their order.
func TestPublicPathsFirst(t *testing.T) {
	tab := mustTable(t, []string{"/health", "/static/"}, Rule{Path: "/", Allow: Deny, Source: "file"})
	checkMatches(t, tab, []request{
		{"", "GET", "/health", "--public-path"},
		{"", "GET", "/static/x", "--public-path"},
		{"", "GET", "/other", "file"},
	})
	rules := tab.Rules()
	if len(rules) != 3 || rules[0].Path != "/health" || rules[1].Path != "/static" || rules[2].Source != "file" {
		t.Errorf("rules = %v", rules)
	}
	for _, bad := range []string{"static", "/auth/x", "/a/../b", "/a?b", "/a;b", "/a#b", `/a\b`, "//a"} {
		if _, err := NewTable([]string{bad}, nil); err == nil {
			t.Errorf("public path %q accepted", bad)
		}
	}
}

// A path that is not clean never picks a rule by its look: the caller
// forgot to clean it, and gets MatchAmbiguous's answer.
func TestMatchUncleanPathFailsClosed(t *testing.T) {
	tab := mustTable(t, nil,
		Rule{Path: "/static/", Allow: Public, Source: "static"},
		Rule{Path: "/admin/", Allow: Deny, Source: "admin"},
	)
	for _, p := range []string{"/static/../admin/x", "/static/./x", "//static/x", "static/x", "", "/static/..", "/static/."} {
		if got := tab.Match("", "GET", p); got.Allow != Deny {
			t.Errorf("Match(%q) = %s, want the ambiguous answer (deny)", p, got)
		}
	}
	if got := tab.Match("", "GET", "/static/.x/..y"); got.Source != "static" {
		t.Errorf("a segment starting with dots is clean: got %s", got)
	}
}

func TestMatchAmbiguous(t *testing.T) {
	lenient := mustTable(t, []string{"/static"}, Rule{Path: "/api/", Tokens: true, Source: "api"})
	if got := lenient.MatchAmbiguous("h", "GET"); got.Source != "default" {
		t.Errorf("no restricting rule: %s, want the default rule (never public)", got)
	}
	strict := mustTable(t, nil,
		Rule{Path: "/static/", Allow: Public},
		Rule{Path: "/admin/", Host: "admin.example.com", Groups: []string{"oidc:admins"}},
		Rule{Path: "/", Methods: []string{"DELETE"}, Allow: Deny},
	)
	for _, tc := range []struct {
		host, method string
		want         Allow
	}{
		{"admin.example.com", "GET", Deny}, // the upstream may read the path as /admin/…
		{"ADMIN.example.com:443", "GET", Deny},
		{"app.example.com", "GET", Authenticated},
		{"app.example.com", "DELETE", Deny},
	} {
		if got := strict.MatchAmbiguous(tc.host, tc.method); got.Allow != tc.want {
			t.Errorf("MatchAmbiguous(%q, %q) = %s, want %s", tc.host, tc.method, got.Allow, tc.want)
		}
	}
}

func TestGroupsPass(t *testing.T) {
	r := mustTable(t, nil, Rule{Path: "/", Groups: []string{"oidc:admins", "GitHub:Corp/Ops"}}).Rules()[0]
	for _, tc := range []struct {
		groups string
		want   bool
	}{
		{"oidc:admins", true},
		{"github:corp,github:corp/ops", true},
		{"oidc:admin", false},
		{"oidc:Admins", false}, // oidc groups are compared as the claim spells them
		{"oidc:admins2,github:corp", false},
		{"", false},
	} {
		if got := r.GroupsPass(tc.groups); got != tc.want {
			t.Errorf("GroupsPass(%q) = %t, want %t", tc.groups, got, tc.want)
		}
	}
	if !(Rule{}).GroupsPass("") {
		t.Error("a rule without groups must pass any session")
	}
}

// NewTable does not write into the caller's slices while normalizing.
func TestNewTableKeepsCallersSlices(t *testing.T) {
	methods := []string{"get"}
	mustTable(t, nil, Rule{Path: "/", Methods: methods})
	if methods[0] != "get" {
		t.Errorf("caller's methods rewritten to %q", methods)
	}
}

func TestNewTableRefusesBadRules(t *testing.T) {
	for _, tc := range []struct {
		rule Rule
		want string
	}{
		{Rule{}, "path: is empty"},
		{Rule{Path: "static/"}, "must start with /"},
		{Rule{Path: "/a", Allow: Public, Groups: []string{"oidc:x"}}, "groups: only an allow: authenticated rule"},
		{Rule{Path: "/a", Allow: Deny, Tokens: true}, "tokens: only"},
		{Rule{Path: "/a", Allow: Public, SecondFactor: true}, "second-factor: only"},
		{Rule{Path: "/a", Allow: Deny, MaxAge: time.Minute}, "max-age: only"},
		{Rule{Path: "/a", MaxAge: -time.Minute}, "max-age:"},
		{Rule{Path: "/a", Groups: []string{"admins"}}, "want prefix:name"},
		{Rule{Path: "/a", Methods: []string{"GE T"}}, "not a method name"},
		{Rule{Path: "/a", Methods: []string{}}, "methods: an empty list"},
		{Rule{Path: "/a", Groups: []string{}}, "groups: an empty list"},
		{Rule{Path: "/a", Host: "a.example.com:80"}, "without the port"},
		{Rule{Path: "/a", Allow: Allow(7)}, "allow: unknown"},
		{Rule{Path: "/a", Source: "f.yaml:3", Host: "a b"}, "f.yaml:3: host:"},
	} {
		_, err := NewTable(nil, []Rule{tc.rule})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewTable(%+v): err = %v, want it to contain %q", tc.rule, err, tc.want)
		}
	}
}

func TestLive(t *testing.T) {
	var l Live
	if l.Rules() != nil {
		t.Fatal("a new Live holds a table")
	}
	tab := mustTable(t, nil, Rule{Path: "/x", Allow: Deny})
	l.Store(tab)
	if l.Rules() != tab {
		t.Fatal("Store did not put the table in force")
	}
	var none *Live
	if none.Rules().Match("", "GET", "/x").Source != "default" {
		t.Fatal("a nil Live must answer with the default rule")
	}
}

// hundredRules is a table of 100 restricting and lenient rules on other
// paths and hosts, then the one that matches "/wanted/x".
func hundredRules(t testing.TB) *Table {
	var rules []Rule
	for i := range 99 {
		r := Rule{Path: fmt.Sprintf("/area%d/", i)}
		switch i % 4 {
		case 0:
			r.Allow = Public
		case 1:
			r.Groups = []string{"oidc:g" + fmt.Sprint(i)}
		case 2:
			r.Host, r.Allow = fmt.Sprintf("h%d.example.com", i), Deny
		case 3:
			r.Methods = []string{"POST", "PUT"}
		}
		rules = append(rules, r)
	}
	rules = append(rules, Rule{Path: "/wanted/", Allow: Public, Source: "wanted"})
	return mustTable(t, nil, rules...)
}

func TestMatchDoesNotAllocate(t *testing.T) {
	tab := hundredRules(t)
	allocs := testing.AllocsPerRun(100, func() {
		if tab.Match("App.Example.com:443", "GET", "/wanted/x").Source != "wanted" {
			t.Fatal("no match")
		}
		tab.Match("app.example.com", "GET", "/nowhere")
		tab.MatchAmbiguous("app.example.com", "GET")
		tab.Match("app.example.com", "GET", "/a/../b")
	})
	if allocs != 0 {
		t.Fatalf("Match allocates %.1f times a call", allocs)
	}
}

// BenchmarkMatch100 matches against 100 rules, the match being the last.
func BenchmarkMatch100(b *testing.B) {
	tab := hundredRules(b)
	b.ReportAllocs()
	for b.Loop() {
		tab.Match("app.example.com:443", "GET", "/wanted/some/asset.css")
	}
}

// Upstreams answer HEAD with their GET handler (Go's net/http, Express,
// Rails, Django): a restricting rule limited to GET also holds HEAD, or a
// HEAD request would run the handler the rule keeps from the user and
// read its headers. A rule that lets through stays as written.
func TestMatchRestrictingGetRuleHoldsHead(t *testing.T) {
	tab := mustTable(t, nil,
		Rule{Path: "/export/", Methods: []string{"GET"}, Allow: Deny, Source: "export"},
		Rule{Path: "/admin/", Methods: []string{"GET"}, Groups: []string{"oidc:admins"}, Source: "admin"},
		Rule{Path: "/pub/", Methods: []string{"GET"}, Allow: Public, Source: "pub"},
	)
	checkMatches(t, tab, []request{
		{"", "GET", "/export/all.csv", "export"},
		{"", "HEAD", "/export/all.csv", "export"},
		{"", "head", "/export/all.csv", "export"},
		{"", "HEAD", "/admin/users", "admin"},
		{"", "POST", "/admin/users", "default"},
		{"", "HEAD", "/pub/x", "default"},
	})
	if got := tab.MatchAmbiguous("", "HEAD"); got.Allow != Deny {
		t.Errorf("ambiguous HEAD beside a GET-only deny rule: %s, want deny", got)
	}
}

// A Host that is not one name (or address) and an optional port cannot be
// compared with a rule's host, but the app may still read it as that host
// ("admin.example.com:80:80" split at its first colon, the empty label of
// "admin.example.com.." dropped). A rule of a host that restricts holds
// such a request; a rule of a host that lets through does not.
func TestMatchMalformedHost(t *testing.T) {
	tab := mustTable(t, nil,
		Rule{Path: "/", Host: "admin.example.com", Groups: []string{"oidc:admins"}, Source: "admin"},
		Rule{Path: "/pub/", Host: "www.example.com", Allow: Public, Source: "www-public"},
		Rule{Path: "/internal/", Allow: Deny, Source: "internal"},
	)
	checkMatches(t, tab, []request{
		{"admin.example.com:80:80", "GET", "/x", "admin"},
		{"admin.example.com..", "GET", "/x", "admin"},
		{".admin.example.com", "GET", "/x", "admin"},
		{"admin..example.com", "GET", "/x", "admin"},
		{"admin%2eexample.com", "GET", "/x", "admin"},
		{"admin.example.com:", "GET", "/x", "admin"},
		{"admin.example.com:8o", "GET", "/x", "admin"},
		{"admin.example.com\u3002", "GET", "/x", "admin"},
		{"[::1", "GET", "/x", "admin"},
		// Well formed: compared as before.
		{"admin.example.com.:443", "GET", "/x", "admin"},
		{"www.example.com", "GET", "/pub/x", "www-public"},
		{"app.example.com", "GET", "/x", "default"},
		{"[::1]:8080", "GET", "/x", "default"},
		{"10.0.0.1", "GET", "/x", "default"},
	})
	if got := tab.MatchAmbiguous("admin.example.com:80:80", "GET"); got.Allow != Deny {
		t.Errorf("ambiguous path on a malformed host: %s, want deny", got)
	}
}
