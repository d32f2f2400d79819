package route

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// parseRoutes parses doc, a YAML document with a "routes:" key, as the
// configuration file f.yaml.
func parseRoutes(t *testing.T, doc string) ([]Rule, error) {
	t.Helper()
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &root); err != nil {
		t.Fatalf("YAML: %v", err)
	}
	if len(root.Content) == 0 {
		return Parse("f.yaml", nil)
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "routes" {
			return Parse("f.yaml", m.Content[i+1])
		}
	}
	t.Fatal("no routes key")
	return nil, nil
}

func TestParse(t *testing.T) {
	rules, err := parseRoutes(t, `
routes:
  - path: /static/            # prefix at a segment boundary
    allow: public
  - path: "=/healthz"
    allow: public
  - path: /admin/
    methods: [get, POST]
    host: Admin.Corp.com
    groups: [oidc:admins, github:Corp/Ops]
    second-factor: required
    max-age: 15m
  - path: /api/
    tokens: true
  - path: /old/
    allow: deny
    second-factor: optional
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{
		{Path: "/static/", Allow: Public, Source: "f.yaml:3"},
		{Path: "=/healthz", Allow: Public, Source: "f.yaml:5"},
		{Path: "/admin/", Methods: []string{"GET", "POST"}, Host: "admin.corp.com", Groups: []string{"oidc:admins", "github:corp/ops"}, SecondFactor: true, MaxAge: 15 * time.Minute, Source: "f.yaml:7"},
		{Path: "/api/", Tokens: true, Source: "f.yaml:13"},
		{Path: "/old/", Allow: Deny, Source: "f.yaml:15"},
	}
	if len(rules) != len(want) {
		t.Fatalf("%d rules, want %d: %v", len(rules), len(want), rules)
	}
	for i := range want {
		if got := rules[i]; got.String() != want[i].String() || got.Source != want[i].Source {
			t.Errorf("rule %d = %s (%s), want %s (%s)", i, got, got.Source, want[i], want[i].Source)
		}
	}
	for _, doc := range []string{"routes:\n", "routes: []\n", "other: 1\nroutes: ~\n"} {
		if rules, err := parseRoutes(t, doc); err != nil || len(rules) != 0 {
			t.Errorf("%q: %v, %v; want no rules", doc, rules, err)
		}
	}
}

// Every bad rule names the file, the line of the offending key and the key.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"unknown key", "routes:\n  - path: /a\n    alow: public\n", `f.yaml:3: routes: unknown key "alow" (did you mean allow?)`},
		{"unknown key far off", "routes:\n  - path: /a\n    color: red\n", `f.yaml:3: routes: unknown key "color"`},
		{"repeated key", "routes:\n  - path: /a\n    allow: public\n    allow: deny\n", "f.yaml:4: routes: allow: repeated (first at line 3)"},
		{"empty path", "routes:\n  - path: \"\"\n", "f.yaml:2: routes: path: is empty"},
		{"no path", "routes:\n  - allow: public\n", "f.yaml:2: routes: a rule needs a path"},
		{"relative path", "routes:\n  - path: static/\n", `f.yaml:2: routes: path: "static/" must start with /`},
		{"query in path", "routes:\n  - path: /a?b\n", "f.yaml:2: routes: path:"},
		{"escape in path", "routes:\n  - path: /a%2Fb\n", "holds the escape %2F"},
		{"dot segment", "routes:\n  - path: /static/../admin\n", `it reads as "/admin"`},
		{"glob", "routes:\n  - path: /static/*\n", `write "/static/"`},
		{"under auth", "routes:\n  - path: /auth/login\n", "/auth/, which Gatehouse answers itself"},
		{"unknown allow", "routes:\n  - path: /a\n    allow: pubic\n", `f.yaml:3: routes: allow: "pubic": want public, authenticated or deny (did you mean public?)`},
		{"allow case", "routes:\n  - path: /a\n    allow: Public\n", "(did you mean public?)"},
		{"bad duration", "routes:\n  - path: /a\n\n    max-age: 15 minutes\n", `f.yaml:4: routes: max-age: "15 minutes" is not a duration`},
		{"zero duration", "routes:\n  - path: /a\n    max-age: 0s\n", "must be positive"},
		{"duration as number", "routes:\n  - path: /a\n    max-age: 900\n", "max-age: want a string, not the number 900"},
		{"malformed group", "routes:\n  - path: /a\n    groups: [admins]\n", `f.yaml:3: routes: groups: "admins": want prefix:name`},
		{"unknown group prefix", "routes:\n  - path: /a\n    groups: [ldap:admins]\n", `unknown group prefix "ldap:"`},
		{"bad github org", "routes:\n  - path: /a\n    groups: [github:-x]\n", "not a GitHub organization name"},
		{"group list as string", "routes:\n  - path: /a\n    groups: oidc:admins\n", "groups: want a list such as [oidc:admins], not \"oidc:admins\""},
		{"methods as string", "routes:\n  - path: /a\n    methods: GET\n", "methods: want a list"},
		{"tokens not bool", "routes:\n  - path: /a\n    tokens: yes\n", `f.yaml:3: routes: tokens: want true or false, not "yes"`},
		{"second factor", "routes:\n  - path: /a\n    second-factor: always\n", `second-factor: "always": want required`},
		{"public with groups", "routes:\n  - path: /a\n    allow: public\n    groups: [oidc:x]\n", "f.yaml:4: routes: groups: only an allow: authenticated rule takes groups; this one is allow: public"},
		{"deny with tokens", "routes:\n  - path: /a\n    allow: deny\n    tokens: true\n", "f.yaml:4: routes: tokens: only"},
		{"host with port", "routes:\n  - path: /a\n    host: a.example.com:8080\n", "f.yaml:3: routes: host: \"a.example.com:8080\": give the host without the port"},
		{"not a list", "routes:\n  path: /a\n", "f.yaml:2: routes: want a list of rules"},
		{"rule not a mapping", "routes:\n  - /a\n", "f.yaml:2: routes: each rule is a mapping"},
		{"path as list", "routes:\n  - path: [/a]\n", "path: want a string, not a list"},
		{"null value", "routes:\n  - path: /a\n    host:\n", "host: want a string, not nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseRoutes(t, tc.doc)
			if err == nil {
				t.Fatalf("accepted:\n%s", tc.doc)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q\ndoes not contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q is not one line", err)
			}
		})
	}
}

// Anchors and aliases are YAML: a rule may reuse another's groups.
func TestParseAliases(t *testing.T) {
	rules, err := parseRoutes(t, "routes:\n  - path: /a/\n    groups: &ops [oidc:ops]\n  - path: /b/\n    groups: *ops\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 2 || strings.Join(rules[1].Groups, ",") != "oidc:ops" {
		t.Fatalf("rules = %v", rules)
	}
}
