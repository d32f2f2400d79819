package main

import (
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The bearer JWT flags: an issuer without the audience, or the audience
// without an issuer, is a usage error naming both; an issuer is an http(s)
// URL (http only on loopback); the audience is never a sign-in client id.
// Each refusal is one line, exit 2, before any port opens.
func TestBearerJWTFlags(t *testing.T) {
	base := []string{"--upstream", "http://127.0.0.1:3000", "--base-url", "http://127.0.0.1:18080", "--listen", "127.0.0.1:18080", "--admin-listen", ""}
	for _, tc := range []struct {
		args []string
		says []string
	}{
		{[]string{"--bearer-jwt-issuer", "https://idp.example.com"}, []string{"--bearer-jwt-issuer", "--bearer-jwt-audience"}},
		{[]string{"--bearer-jwt-audience", "api://orders"}, []string{"--bearer-jwt-audience", "--bearer-jwt-issuer"}},
		{[]string{"--bearer-jwt-issuer", "http://idp.example.com", "--bearer-jwt-audience", "api://orders"}, []string{"--bearer-jwt-issuer", "loopback"}},
		{[]string{"--bearer-jwt-issuer", "idp.example.com", "--bearer-jwt-audience", "api://orders"}, []string{"--bearer-jwt-issuer", "absolute"}},
		{[]string{"--bearer-jwt-issuer", "https://idp.example.com?tenant=x", "--bearer-jwt-audience", "api://orders"}, []string{"--bearer-jwt-issuer", "query"}},
		{[]string{"--bearer-jwt-issuer", "https://idp.example.com,https://idp.example.com", "--bearer-jwt-audience", "api://orders"}, []string{"--bearer-jwt-issuer", "twice"}},
		{[]string{"--bearer-jwt-issuer", "https://idp.example.com", "--bearer-jwt-audience", " api://orders"}, []string{"--bearer-jwt-audience", "space"}},
		{[]string{"--bearer-jwt-issuer", "https://accounts.google.com", "--bearer-jwt-audience", "the-client.apps.googleusercontent.com",
			"--google-client-id", "the-client.apps.googleusercontent.com", "--google-client-secret", "s"}, []string{"--bearer-jwt-audience", "--google-client-id"}},
	} {
		db := filepath.Join(t.TempDir(), "g.db")
		code, out, errOut := cli(t, "", append(append(slices.Clone(base), "--db", db), tc.args...)...)
		if code != 2 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line", tc.args, code, out, errOut)
			continue
		}
		for _, s := range tc.says {
			if !strings.Contains(errOut, s) {
				t.Errorf("%v: %q does not say %q", tc.args, errOut, s)
			}
		}
	}

	cfg, err := parseServe(append(base, "--bearer-jwt-issuer", "https://idp.example.com/realms/corp", "--bearer-jwt-audience", "api://orders",
		"--oidc-groups-claim", "roles"), envOf(map[string]string{"GATEHOUSE_BEARER_JWT_ISSUER": "https://ignored.example.com"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Bearer
	if strings.Join(b.JWTIssuers, " ") != "https://idp.example.com/realms/corp" || b.JWTAudience != "api://orders" || b.GroupsClaim != "roles" {
		t.Errorf("bearer config %+v", b)
	}
	cfg, err = parseServe(base, envOf(map[string]string{"GATEHOUSE_BEARER_JWT_ISSUER": "https://a.example.com,http://127.0.0.1:9000",
		"GATEHOUSE_BEARER_JWT_AUDIENCE": "api://orders"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.Bearer.JWTIssuers, " ") != "https://a.example.com http://127.0.0.1:9000" || cfg.Bearer.GroupsClaim != "groups" {
		t.Errorf("bearer config from the environment %+v", cfg.Bearer)
	}
}

// A JWT acts as jwt:HOST:SUB, HOST being its issuer's host: two issuers on
// one host (two Keycloak realms, two Okta authorization servers) would
// make a user of one and a user of the other with the same sub one
// identity to the app, so the start refuses them, naming the host; so do
// two ports of one host, since a sub may hold ":".
func TestBearerJWTIssuersShareNoHost(t *testing.T) {
	base := []string{"--upstream", "http://127.0.0.1:3000", "--base-url", "http://127.0.0.1:18080", "--listen", "127.0.0.1:18080", "--admin-listen", ""}
	for _, issuers := range []string{
		"https://kc.example.com/realms/corp,https://kc.example.com/realms/partners",
		"https://kc.example.com/realms/corp,https://KC.example.com/",
		// Another port does not part them: the sub "8443:x" of the first
		// makes jwt:kc.example.com:8443:x, the sub "x" of the second too.
		"https://kc.example.com,https://kc.example.com:8443",
	} {
		db := filepath.Join(t.TempDir(), "g.db")
		// config check: validates as a start would, opens no port.
		code, out, errOut := cli(t, "", append(append([]string{"config", "check"}, base...), "--db", db, "--bearer-jwt-issuer", issuers, "--bearer-jwt-audience", "api://orders")...)
		if code != 2 || out != "" || !strings.Contains(errOut, "--bearer-jwt-issuer") || !strings.Contains(errOut, "kc.example.com") {
			t.Errorf("issuers %s: exit %d, stderr %q; want exit 2 naming the shared host", issuers, code, errOut)
		}
	}
}
