package proxy

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gatehouse-auth/gatehouse/proxy/route"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// advisoryCase is one line of proxy/route/testdata/advisories.txt.
type advisoryCase struct {
	line                       int
	method, host, target, want string
	ambiguous                  bool
}

// advisoryRules reads the rule table of proxy/route/testdata/advisories.yaml.
func advisoryRules(t *testing.T) []route.Rule {
	t.Helper()
	const file = "route/testdata/advisories.yaml"
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		t.Fatal(err)
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "routes" {
			rules, err := route.Parse(file, m.Content[i+1])
			if err != nil {
				t.Fatal(err)
			}
			return rules
		}
	}
	t.Fatal("no routes in " + file)
	return nil
}

func advisoryCases(t *testing.T) []advisoryCase {
	t.Helper()
	f, err := os.Open("route/testdata/advisories.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []advisoryCase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 5 {
			t.Fatalf("advisories.txt:%d: %q", n, line)
		}
		cases = append(cases, advisoryCase{line: n, method: fs[0], host: fs[1], target: fs[2], ambiguous: fs[3] == "yes", want: fs[4]})
	}
	if len(cases) < 50 {
		t.Fatalf("only %d cases", len(cases))
	}
	return cases
}

// advisoryOutcome names the answers to the same request without a session
// (anonymous) and with a session without groups (member), as
// advisories.txt labels outcomes.
func advisoryOutcome(anonymous, member int, memberBody string) string {
	switch {
	case anonymous == http.StatusForbidden && member == http.StatusForbidden:
		return "deny"
	case anonymous == http.StatusOK && member == http.StatusOK:
		return "public"
	case anonymous == http.StatusUnauthorized && member == http.StatusOK:
		return "authenticated"
	case anonymous == http.StatusUnauthorized && member == http.StatusForbidden && strings.Contains(memberBody, "access_denied"):
		return "admins"
	}
	return fmt.Sprintf("anonymous %d, member %d", anonymous, member)
}

// sendRaw sends the request line and headers verbatim, so that no client
// library cleans or re-encodes the target.
func sendRaw(t *testing.T, addr, method, target, host string, header ...string) (int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	var extra strings.Builder
	for i := 0; i+1 < len(header); i += 2 {
		fmt.Fprintf(&extra, "%s: %s\r\n", header[i], header[i+1])
	}
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\n%sConnection: close\r\n\r\n", method, target, host, extra.String())
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	return res.StatusCode, body(t, res)
}

// The peers' advisory classes (proxy/route/testdata/advisories.txt)
// through the real proxy over TCP, each target sent verbatim: the outcome
// is the matcher's, and a client's routing headers (X-Forwarded-Uri,
// X-Original-URL, X-Forwarded-Prefix) change nothing.
func TestAdvisoriesThroughTheProxy(t *testing.T) {
	e := newEnv(t, withRules(t, nil, advisoryRules(t)...))
	srv := httptest.NewServer(e.proxy)
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	id := e.signIn(sessionID)
	cookie := DefaultCookieName + "=" + id
	forged := []string{"X-Forwarded-Uri", "/static/x", "X-Original-URL", "/static/x", "X-Forwarded-Prefix", "/static", "X-Original-Method", "POST"}
	for _, c := range advisoryCases(t) {
		anonymous, _ := sendRaw(t, addr, c.method, c.target, c.host, forged...)
		member, text := sendRaw(t, addr, c.method, c.target, c.host, append([]string{"Cookie", cookie}, forged...)...)
		if got := advisoryOutcome(anonymous, member, text); got != c.want {
			t.Errorf("advisories.txt:%d: %s %s %s: %s, want %s", c.line, c.method, c.host, c.target, got, c.want)
		}
	}
	for _, seen := range e.upstream.all() {
		for _, h := range []string{"X-Forwarded-Uri", "X-Original-Url", "X-Forwarded-Prefix"} {
			if v := seen.Header.Get(h); v != "" {
				t.Errorf("upstream got the client's %s %q", h, v)
			}
		}
	}
}

// The same requests asked of both check endpoints, as a fronting proxy
// asks them: the original target in X-Forwarded-Uri (or X-Original-URL).
// There the upstream gets the raw target, so one whose decoded form an
// upstream could read otherwise (a ".." included) gets MatchAmbiguous's
// answer: denied, since every host of the table has a restricting rule. A
// target the fronting proxy would never send (a fragment) is 400.
func TestAdvisoriesThroughTheCheckEndpoints(t *testing.T) {
	e := newEnv(t, withRules(t, nil, advisoryRules(t)...), func(c *Config) { c.ForwardAuthTrusted = web.TrustedProxies{trustedPrefix} })
	id := e.signIn(sessionID)
	for _, c := range advisoryCases(t) {
		method := strings.ToUpper(c.method) // what a fronting proxy sends
		want := c.want
		raw, err := url.ParseRequestURI(strings.SplitN(c.target, "#", 2)[0])
		if err != nil {
			t.Fatalf("advisories.txt:%d: %v", c.line, err)
		}
		if ambiguous(raw.Path) {
			want = "deny"
		}
		for name, ask := range map[string]func() *http.Request{
			"forward-auth": func() *http.Request {
				return forwardAuth(c.target, "X-Forwarded-Host", c.host, "X-Forwarded-Method", method, "Accept", "application/json")
			},
			"auth-request": func() *http.Request {
				r := authRequest("https://" + c.host + c.target)
				r.Header.Set("X-Original-Method", method)
				r.Header.Set("Accept", "application/json")
				return r
			},
		} {
			anonymous := e.serve(ask())
			member := e.serve(withCookie(ask(), id))
			text := body(t, member)
			if strings.Contains(c.target, "#") {
				if anonymous.StatusCode != http.StatusBadRequest || member.StatusCode != http.StatusBadRequest {
					t.Errorf("advisories.txt:%d: %s %s: %d/%d, want 400", c.line, name, c.target, anonymous.StatusCode, member.StatusCode)
				}
				continue
			}
			if got := advisoryOutcome(anonymous.StatusCode, member.StatusCode, text); got != want {
				t.Errorf("advisories.txt:%d: %s %s %s %s: %s, want %s", c.line, name, method, c.host, c.target, got, want)
			}
		}
	}
}

// From a peer outside --forward-auth-trusted the check endpoints read no
// forwarded header: 403, whatever path they name.
func TestCheckFromUntrustedPeerIgnoresForwardedPath(t *testing.T) {
	e := newEnv(t, withRules(t, nil, advisoryRules(t)...), func(c *Config) { c.ForwardAuthTrusted = web.TrustedProxies{trustedPrefix} })
	for _, r := range []*http.Request{
		forwardAuth("/static/x", "X-Forwarded-Prefix", "/static"),
		authRequest("https://app.example.com/static/x"),
	} {
		r.RemoteAddr = "192.0.2.7:5000"
		if res := e.serve(r); res.StatusCode != http.StatusForbidden {
			t.Errorf("%s from an untrusted peer: %d, want 403", r.URL.Path, res.StatusCode)
		}
	}
}
