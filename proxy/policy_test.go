package proxy

import (
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/policy"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// withPolicy sets a policy of rules on the proxy.
func withPolicy(t *testing.T, rules policy.Rules) func(*Config) {
	t.Helper()
	p, err := policy.New(rules, nil)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *Config) { c.Policy = p }
}

// signInAs stores a valid session of email with the groups its sign-in earned.
func (e *env) signInAs(id, email, groups string) string {
	e.store.put(id, storage.Session{
		UserID: userID, Email: email, Groups: groups, Method: "github",
		CreatedAt: epoch.Add(-time.Hour), ExpiresAt: epoch.Add(24 * time.Hour), LastSeen: epoch.Add(-10 * time.Second),
	})
	return id
}

// AP2: every proxied request is judged by the policy, from the session record.
func TestPolicyOnEveryRequest(t *testing.T) {
	rules := policy.Rules{EmailDomains: []string{"corp.com"}, GitHubOrgs: []string{"acme"}}
	for _, tc := range []struct {
		name, email, groups string
		pass                bool
	}{
		{"matching domain", "ada@corp.com", "", true},
		{"other domain", "ada@example.com", "", false},
		{"org earned at sign-in", "ada@example.com", "github:acme", true},
		{"org not configured", "ada@example.com", "github:other", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withPolicy(t, rules))
			res := e.serve(withCookie(get("/app", "Accept", "application/json"), e.signInAs(sessionID, tc.email, tc.groups)))
			text := body(t, res)
			if !tc.pass {
				if res.StatusCode != http.StatusForbidden || !strings.Contains(text, `"code":"access_denied"`) {
					t.Fatalf("refused user: status %d body %s, want 403 access_denied", res.StatusCode, text)
				}
				if e.upstream.count() != 0 {
					t.Fatal("a refused request reached the upstream")
				}
				if e.counterValue(t, "refused") != 1 {
					t.Error("refusal not counted")
				}
				return
			}
			if res.StatusCode != http.StatusOK || e.upstream.count() != 1 {
				t.Fatalf("allowed user: status %d, upstream got %d", res.StatusCode, e.upstream.count())
			}
			if n := e.store.reads.Load(); n != 1 {
				t.Fatalf("%d store reads for one request, want the session lookup only", n)
			}
		})
	}
}

// A browser refused by the policy gets a page with a sign-out button.
func TestPolicyRefusalPageHasSignOut(t *testing.T) {
	e := newEnv(t, withPolicy(t, policy.Rules{EmailDomains: []string{"corp.com"}}))
	res := e.serve(withCookie(get("/app", "Accept", "text/html"), e.signInAs(sessionID, "ada@example.com", "")))
	text := body(t, res)
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("status %d, want 403", res.StatusCode)
	}
	if !strings.Contains(text, `<form method="post" action="/auth/logout">`) || !strings.Contains(text, "Sign out") {
		t.Fatalf("the page has no sign-out form:\n%s", text)
	}
	if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q", cc)
	}
}

// On a public path a refused user is served as nobody: no identity goes up.
func TestPolicyRefusedOnPublicPath(t *testing.T) {
	e := newEnv(t, withPolicy(t, policy.Rules{EmailDomains: []string{"corp.com"}}))
	res := e.serve(withCookie(get("/static/app.css"), e.signInAs(sessionID, "ada@example.com", "github:acme")))
	body(t, res)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	h := e.upstream.last(t).Header
	for _, name := range []string{"X-Forwarded-User", "X-Forwarded-Email", "X-Forwarded-Groups"} {
		if v := h.Values(name); len(v) != 0 {
			t.Errorf("%s = %q sent for a refused user", name, v)
		}
	}
}

// An address removed from the emails file loses access at its next request,
// with no restart (AP2); the gate reads only memory for it.
func TestPolicyEmailsFileRemovalOnNextRequest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "emails.txt")
	if err := os.WriteFile(path, []byte("ada@example.com\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := policy.New(policy.Rules{EmailsFile: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *Config) { c.Policy = p })
	id := e.signInAs(sessionID, "ada@example.com", "")
	if res := e.serve(withCookie(get("/app"), id)); res.StatusCode != http.StatusOK {
		t.Fatalf("listed: status %d", res.StatusCode)
	}
	if err := os.WriteFile(path, []byte("# nobody\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Second)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	p.Refresh() // what the watcher does every second
	if res := e.serve(withCookie(get("/app"), id)); res.StatusCode != http.StatusForbidden {
		t.Fatalf("removed: status %d, want 403", res.StatusCode)
	}
	if e.upstream.count() != 1 {
		t.Fatalf("upstream got %d requests, want 1", e.upstream.count())
	}
}

// X-Forwarded-Groups carries the session's groups; absent when none; a
// client's copy never reaches the upstream (PX1).
func TestForwardedGroups(t *testing.T) {
	for _, tc := range []struct{ name, groups string }{
		{"with groups", "github:acme,github:acme/ops,google:corp.com,oidc:admins"},
		{"without groups", ""},
	} {
		e := newEnv(t)
		r := withCookie(get("/app", "X-Forwarded-Groups", "oidc:forged", "X_Forwarded_Groups", "oidc:forged2"), e.signInAs(sessionID, userEmail, tc.groups))
		e.serve(r)
		got := e.upstream.last(t).Header
		v := got.Values("X-Forwarded-Groups")
		switch {
		case tc.groups == "" && len(v) != 0:
			t.Errorf("%s: X-Forwarded-Groups %q, want none", tc.name, v)
		case tc.groups != "" && (len(v) != 1 || v[0] != tc.groups):
			t.Errorf("%s: X-Forwarded-Groups %q, want %q", tc.name, v, tc.groups)
		}
		if v := got.Values("X_Forwarded_Groups"); len(v) != 0 {
			t.Errorf("%s: the client's X_Forwarded_Groups reached the upstream: %q", tc.name, v)
		}
	}
	// Anonymous on a public path: the forged copy is gone and nothing is set.
	e := newEnv(t)
	e.serve(get("/static/x", "X-Forwarded-Groups", "oidc:admins"))
	if v := e.upstream.last(t).Header.Values("X-Forwarded-Groups"); len(v) != 0 {
		t.Errorf("anonymous public request: X-Forwarded-Groups %q", v)
	}
}

// The check endpoints apply the access policy as the proxy does (AP2): a
// signed-in user the policy refuses gets 403 and no identity on a protected
// path, and is nobody on a public one.
func TestCheckAppliesPolicy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rules  policy.Rules
		uri    string
		status int
		user   string
	}{
		{"passes", policy.Rules{EmailDomains: []string{"example.com"}}, "/private", 200, userID},
		{"refused", policy.Rules{EmailDomains: []string{"corp.com"}}, "/private", 403, ""},
		{"refused on a public path", policy.Rules{EmailDomains: []string{"corp.com"}}, "/static/a.css", 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withPolicy(t, tc.rules), func(c *Config) {
				c.ForwardAuthTrusted = web.TrustedProxies{netip.MustParsePrefix("10.0.0.0/24")}
			})
			r := forwardAuth(tc.uri)
			withCookie(r, e.signIn(sessionID))
			res := e.serve(r)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tc.status)
			}
			if got := res.Header.Get("X-Forwarded-User"); got != tc.user {
				t.Fatalf("X-Forwarded-User %q, want %q", got, tc.user)
			}
		})
	}
}
