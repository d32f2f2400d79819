package proxy

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/policy"
	"github.com/gatehouse-auth/gatehouse/proxy/route"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// withRules puts the route table of publicPaths and rules in force.
func withRules(t *testing.T, publicPaths []string, rules ...route.Rule) func(*Config) {
	live := liveRules(t, publicPaths, rules...)
	return func(c *Config) { c.Routes = live }
}

// signInWith stores a valid session changed by edit and returns its id.
func (e *env) signInWith(id string, edit func(*storage.Session)) string {
	s := storage.Session{
		UserID: userID, Email: userEmail, Method: storage.MethodPassword,
		CreatedAt: epoch.Add(-time.Hour), ExpiresAt: epoch.Add(24 * time.Hour), LastSeen: epoch.Add(-10 * time.Second),
	}
	edit(&s)
	e.store.put(id, s)
	return id
}

// The route is chosen from the request the upstream gets (Pomerium
// CVE-2023-33189): the cleaned path, never the query; the host without port,
// trailing dot or case; the method in any case. The proxy asks with its own
// Host, the check endpoints with the forwarded host and method.
func TestRouteMatchedWithWhatIsForwarded(t *testing.T) {
	e := newEnv(t, withRules(t, nil,
		route.Rule{Path: "=/b/", Host: "app.example.com", Methods: []string{"POST"}, Allow: route.Deny},
		route.Rule{Path: "=/d", Host: "gate.example.com", Methods: []string{"DELETE"}, Allow: route.Deny},
		route.Rule{Path: "=/e/f", Host: "2001:db8::1", Allow: route.Deny},
	), func(c *Config) { c.ForwardAuthTrusted = web.TrustedProxies{trustedPrefix} })
	id := e.signIn(sessionID)
	denied := func(name string, res *http.Response) {
		t.Helper()
		if text := body(t, res); res.StatusCode != http.StatusForbidden || !strings.Contains(text, "route_denied") {
			t.Errorf("%s: status %d %.80q, want 403 route_denied", name, res.StatusCode, text)
		}
	}
	denied("proxy", e.serve(withCookie(httptest.NewRequest("post", "http://App.Example.COM.:8080/a/../b/?x=/static", nil), id)))
	if res := e.serve(withCookie(httptest.NewRequest("GET", "http://app.example.com/a/../b/", nil), id)); res.StatusCode != http.StatusOK {
		t.Errorf("proxy, another method: %d", res.StatusCode)
	}
	denied("forward-auth", e.serve(withCookie(forwardAuth("/c/%2e%2e/d?x=/static", "X-Forwarded-Host", "Gate.Example.com:443", "X-Forwarded-Method", "DELETE"), id)))
	denied("auth-request", e.serve(withCookie(authRequest("https://[2001:dB8::1]:8443/e//f"), id)))
	if res := e.serve(withCookie(forwardAuth("/d", "X-Forwarded-Method", "DELETE"), id)); res.StatusCode != http.StatusOK {
		t.Errorf("forward-auth, another host: %d", res.StatusCode)
	}
}

// A route that denies refuses everyone, signed in or not, with 403
// route_denied, on the proxy and on both check endpoints, without a store
// read; nothing reaches the upstream.
func TestDenyRoute(t *testing.T) {
	e := newEnv(t, withRules(t, nil, route.Rule{Path: "/", Allow: route.Deny}),
		func(c *Config) { c.ForwardAuthTrusted = web.TrustedProxies{trustedPrefix} })
	id := e.signIn(sessionID)
	for name, r := range map[string]*http.Request{
		"proxy, signed in":     withCookie(get("/app", "Accept", "application/json"), id),
		"proxy, anonymous":     get("/app", "Accept", "application/json"),
		"forward-auth":         withCookie(forwardAuth("/app", "Accept", "application/json"), id),
		"auth-request":         authRequest("https://app.example.com/app"),
		"proxy, browser, page": withCookie(get("/app", "Accept", "text/html"), id),
	} {
		res := e.serve(r)
		text := body(t, res)
		if res.StatusCode != http.StatusForbidden || !strings.Contains(text, "route_denied") {
			t.Errorf("%s: status %d, body %.80q; want 403 route_denied", name, res.StatusCode, text)
		}
		if res.Header.Get("X-Forwarded-User") != "" {
			t.Errorf("%s: an identity in a refusal", name)
		}
	}
	if n := e.store.reads.Load(); n != 0 {
		t.Errorf("%d store reads for requests every one of which is refused", n)
	}
	if e.upstream.count() != 0 {
		t.Error("a denied request reached the upstream")
	}
	if got := e.counterValue(t, "refused"); got != 5 {
		t.Errorf("refused counted %v times, want 5, as the access policy's refusals", got)
	}
}

// outcomeRules exercise every outcome and field of a rule; --public-path
// /pub comes first, so the deny of "/" below it never reaches /pub.
var outcomeRules = []route.Rule{
	{Path: "/static/", Allow: route.Public},
	{Path: "/private/", Allow: route.Deny},
	{Path: "/pub/deny/", Allow: route.Deny}, // after --public-path /pub: never reached
	{Path: "/x/y/", Allow: route.Deny},      // first match wins over /x/ below
	{Path: "/x/", Allow: route.Public},
	{Path: "/admin/", Groups: []string{"oidc:admins"}},
	{Path: "/mfa/", SecondFactor: true},
	{Path: "/fresh/", MaxAge: 15 * time.Minute},
	{Path: "/writes/", Methods: []string{"POST"}, Allow: route.Deny},
}

func TestRouteOutcomes(t *testing.T) {
	sessions := map[string]func(*storage.Session){
		"plain":  func(*storage.Session) {},
		"admin":  func(s *storage.Session) { s.Groups = "github:corp,oidc:admins" },
		"mfa":    func(s *storage.Session) { s.SecondFactor = storage.MethodTOTP },
		"fresh":  func(s *storage.Session) { s.CreatedAt = epoch.Add(-14 * time.Minute) },
		"passky": func(s *storage.Session) { s.Method = storage.MethodPasskey },
	}
	// want per session ("none": no cookie): forward, signin, route_denied,
	// access_denied, reauth:second-factor, reauth:max-age.
	cases := []struct {
		method, path string
		want         map[string]string // session → outcome; missing: "forward"
	}{
		{"GET", "/static/app.js", nil},
		{"GET", "/pub/deny/x", nil},
		{"GET", "/x/z", nil},
		{"GET", "/private/x", map[string]string{"none": "route_denied", "plain": "route_denied", "admin": "route_denied", "mfa": "route_denied", "fresh": "route_denied", "passky": "route_denied"}},
		{"GET", "/x/y/z", map[string]string{"none": "route_denied", "plain": "route_denied", "admin": "route_denied", "mfa": "route_denied", "fresh": "route_denied", "passky": "route_denied"}},
		{"GET", "/other", map[string]string{"none": "signin"}},
		{"GET", "/admin/users", map[string]string{"none": "signin", "plain": "access_denied", "mfa": "access_denied", "fresh": "access_denied", "passky": "access_denied"}},
		{"GET", "/mfa/x", map[string]string{"none": "signin", "plain": "reauth:second-factor", "admin": "reauth:second-factor", "fresh": "reauth:second-factor"}},
		{"GET", "/fresh/x", map[string]string{"none": "signin", "plain": "reauth:max-age", "admin": "reauth:max-age", "mfa": "reauth:max-age", "passky": "reauth:max-age"}},
		{"POST", "/writes/x", map[string]string{"none": "route_denied", "plain": "route_denied", "admin": "route_denied", "mfa": "route_denied", "fresh": "route_denied", "passky": "route_denied"}},
		{"GET", "/writes/x", map[string]string{"none": "signin"}},
	}
	e := newEnv(t, withRules(t, []string{"/pub"}, outcomeRules...),
		func(c *Config) { c.ForwardAuthTrusted = web.TrustedProxies{trustedPrefix} })
	ids := map[string]string{}
	for name, edit := range sessions {
		ids[name] = e.signInWith("session-"+name+strings.Repeat("A", 40), edit)
	}
	for _, tc := range cases {
		for _, who := range []string{"none", "plain", "admin", "mfa", "fresh", "passky"} {
			want := tc.want[who]
			if want == "" {
				want = "forward"
			}
			withID := func(r *http.Request) *http.Request {
				if who != "none" {
					return withCookie(r, ids[who])
				}
				return r
			}
			// The proxy, as an API client (no redirect).
			r := withID(httptest.NewRequest(tc.method, "http://app.example.com"+tc.path, nil))
			r.Header.Set("Accept", "application/json")
			if got := proxyOutcome(t, e.serve(r)); got != want {
				t.Errorf("proxy %s %s as %s: %s, want %s", tc.method, tc.path, who, got, want)
			}
			// The check endpoint, for the same original request.
			fr := withID(forwardAuth(tc.path, "X-Forwarded-Method", tc.method, "Accept", "application/json"))
			if got := proxyOutcome(t, e.serve(fr)); got != want {
				t.Errorf("forward-auth %s %s as %s: %s, want %s", tc.method, tc.path, who, got, want)
			}
		}
	}
}

// proxyOutcome names an answer as TestRouteOutcomes does.
func proxyOutcome(t *testing.T, res *http.Response) string {
	t.Helper()
	text := body(t, res)
	switch res.StatusCode {
	case http.StatusOK:
		return "forward"
	case http.StatusForbidden:
		for _, code := range []string{"route_denied", "access_denied"} {
			if strings.Contains(text, `"`+code+`"`) {
				return code
			}
		}
	case http.StatusUnauthorized:
		if strings.Contains(text, `"reauthentication_required"`) {
			login, err := url.Parse(res.Header.Get(web.LoginHeader))
			if err != nil || login.Query().Get("reauth") == "" {
				return "reauth without a sign-in address: " + res.Header.Get(web.LoginHeader)
			}
			return "reauth:" + login.Query().Get("reauth")
		}
		if strings.Contains(text, `"unauthenticated"`) {
			return "signin"
		}
	}
	return res.Status + " " + text
}

// A session too weak or too old for the route: a navigation in redirect
// mode goes to sign in again with rd and reauth; a fetch, any other
// method, and everything in --mode=401 get 401 reauthentication_required
// with the same address in X-Gatehouse-Login; nothing is forwarded.
func TestReauthAnswers(t *testing.T) {
	for _, mode := range []web.Mode{web.ModeRedirect, web.Mode401} {
		e := newEnv(t, withRules(t, nil, outcomeRules...), func(c *Config) {
			c.Denier = web.Denier{Mode: mode, BaseURL: baseURL}
			c.ForwardAuthTrusted = web.TrustedProxies{trustedPrefix}
		})
		id := e.signIn(sessionID)
		for path, reason := range map[string]string{"/mfa/x?a=1": "second-factor", "/fresh/x?a=1": "max-age"} {
			want := "https://gate.example.com/auth/login?rd=" + url.QueryEscape(path) + "&reauth=" + reason
			res := e.serve(withCookie(get(path, "Accept", "text/html"), id))
			if mode == web.ModeRedirect {
				if res.StatusCode != http.StatusFound || res.Header.Get("Location") != want {
					t.Errorf("%s, navigation %s: %d to %q, want 302 to %q", mode, path, res.StatusCode, res.Header.Get("Location"), want)
				}
			} else if res.StatusCode != http.StatusUnauthorized || res.Header.Get(web.LoginHeader) != want {
				t.Errorf("%s, navigation %s: %d with %q, want 401 with %q", mode, path, res.StatusCode, res.Header.Get(web.LoginHeader), want)
			}
			for name, r := range map[string]*http.Request{
				"fetch": withCookie(get(path, "Sec-Fetch-Mode", "cors"), id),
				"post":  withCookie(httptest.NewRequest("POST", path, nil), id),
			} {
				res := e.serve(r)
				if text := body(t, res); res.StatusCode != http.StatusUnauthorized || !strings.Contains(text, "reauthentication_required") || res.Header.Get(web.LoginHeader) != want {
					t.Errorf("%s, %s %s: %d %q %.60q, want 401 reauthentication_required with %q", mode, name, path, res.StatusCode, res.Header.Get(web.LoginHeader), text, want)
				}
			}
			// The check endpoints: 401, and the address for nginx to redirect to.
			orig := "https://app.example.com" + path
			wantCheck := "https://gate.example.com/auth/login?rd=" + url.QueryEscape(orig) + "&reauth=" + reason
			res = e.serve(withCookie(authRequest(orig), id))
			if res.StatusCode != http.StatusUnauthorized || res.Header.Get("Location") != wantCheck || res.Header.Get(web.LoginHeader) != wantCheck {
				t.Errorf("%s, auth-request %s: %d, Location %q", mode, path, res.StatusCode, res.Header.Get("Location"))
			}
			res = e.serve(withCookie(forwardAuth(path, "Accept", "text/html"), id))
			if res.StatusCode != http.StatusUnauthorized || res.Header.Get(web.LoginHeader) != wantCheck {
				t.Errorf("%s, forward-auth %s: %d, %s %q", mode, path, res.StatusCode, web.LoginHeader, res.Header.Get(web.LoginHeader))
			}
		}
		if e.upstream.count() != 0 {
			t.Errorf("%s: a session too weak for its route reached the upstream", mode)
		}
	}
}

// max-age counts from the sign-in (CreatedAt), not the last use: the same
// session passes until it is older than max-age, then no longer.
func TestMaxAgeFromSignIn(t *testing.T) {
	e := newEnv(t, withRules(t, nil, outcomeRules...))
	id := e.signInWith(sessionID, func(s *storage.Session) { s.CreatedAt = epoch.Add(-15 * time.Minute) })
	if res := e.serve(withCookie(get("/fresh/x", "Accept", "application/json"), id)); res.StatusCode != http.StatusOK {
		t.Fatalf("a sign-in exactly max-age old: %d", res.StatusCode)
	}
	e.clock.Advance(time.Second)
	if res := e.serve(withCookie(get("/fresh/x", "Accept", "application/json"), id)); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a sign-in older than max-age: %d", res.StatusCode)
	}
}

// The global access policy applies to every route that is not public,
// before the route's groups: a session of a refused address gets 403
// access_denied even with the route's group; on a public route it is
// served as to nobody.
func TestPolicyBeforeRouteGroups(t *testing.T) {
	e := newEnv(t, withPolicy(t, policy.Rules{EmailDomains: []string{"corp.com"}}), withRules(t, nil, outcomeRules...))
	id := e.signInWith(sessionID, func(s *storage.Session) { s.Groups = "oidc:admins" })
	if res := e.serve(withCookie(get("/admin/x", "Accept", "application/json"), id)); res.StatusCode != http.StatusForbidden {
		t.Errorf("policy-refused session with the route's group: %d, want 403", res.StatusCode)
	}
	if res := e.serve(withCookie(get("/static/x"), id)); res.StatusCode != http.StatusOK || e.upstream.last(t).Header.Get("X-Forwarded-User") != "" {
		t.Errorf("public route for a policy-refused session: %d, identity %q", res.StatusCode, e.upstream.last(t).Header.Get("X-Forwarded-User"))
	}
}

// A new table put in force (as a reload does) applies to the next request.
func TestRulesReplacedApplyToTheNextRequest(t *testing.T) {
	live := liveRules(t, nil)
	e := newEnv(t, func(c *Config) { c.Routes = live })
	if res := e.serve(get("/docs/x")); res.StatusCode != http.StatusFound {
		t.Fatalf("before: %d", res.StatusCode)
	}
	table, err := route.NewTable(nil, []route.Rule{{Path: "/docs/", Allow: route.Public}})
	if err != nil {
		t.Fatal(err)
	}
	live.Store(table)
	if res := e.serve(get("/docs/x")); res.StatusCode != http.StatusOK {
		t.Fatalf("after: %d", res.StatusCode)
	}
}

// trustedPrefix holds trustedPeer, the check endpoints' peer in tests.
var trustedPrefix = netip.MustParsePrefix("10.0.0.0/24")
