package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

func envOf(m map[string]string) environ {
	return environ(m)
}

func TestParseDefaults(t *testing.T) {
	c, err := parseServe([]string{"--upstream", "http://127.0.0.1:3000"}, envOf(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"listen", c.Listen, ":8080"},
		{"base-url", c.BaseURL.String(), "http://localhost:8080"},
		{"db", c.DB, "gatehouse.db"},
		{"mode", c.Mode, web.ModeRedirect},
		{"admin-listen", c.AdminListen, "127.0.0.1:9090"},
		{"cookie-name", c.CookieName, "gatehouse_session"},
		{"cookie-secure", c.CookieSecure, false},
		{"session-ttl", c.SessionTTL, 168 * time.Hour},
		{"session-idle-ttl", c.SessionIdleTTL, 24 * time.Hour},
		{"reset-token-ttl", c.ResetTokenTTL, 30 * time.Minute},
		{"password-min-length", c.PasswordMinLength, 12},
		{"smtp-tls", c.SMTP.TLS, "starttls"},
		{"smtp-from", c.SMTP.From, "gatehouse@localhost"},
		{"mail-dir", c.MailDir, "mail"},
		{"github-api-url", c.provider("github").APIURL, "https://api.github.com"},
		{"log-format", c.LogFormat, "text"},
		{"log-level", c.LogLevel, "info"},
		{"tls", c.TLS.Enabled(), false},
		{"argon2 memory", c.Argon2Memory, uint32(19456)},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestParseEnvironment(t *testing.T) {
	env := envOf(map[string]string{
		"GATEHOUSE_UPSTREAM":    "http://127.0.0.1:3000",
		"GATEHOUSE_SMTP_ADDR":   "mail.example.com:587",
		"GATEHOUSE_MODE":        "401",
		"GATEHOUSE_PUBLIC_PATH": "/static,/health",
		"GATEHOUSE_LISTEN":      ":9999",
	})
	c, err := parseServe([]string{"--listen", ":7000"}, env, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.SMTP.Addr != "mail.example.com:587" || c.Mode != web.Mode401 || c.Upstream.String() != "http://127.0.0.1:3000" {
		t.Errorf("environment not applied: %+v", c)
	}
	if strings.Join(c.PublicPaths, " ") != "/static /health" {
		t.Errorf("public paths from a comma-separated variable = %q", c.PublicPaths)
	}
	if c.Listen != ":7000" {
		t.Errorf("the command line must win over the environment: listen = %q", c.Listen)
	}
}

func TestParseSecretFiles(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("s3cret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := parseServe([]string{"--upstream", "http://127.0.0.1:3000", "--google-client-id", "id", "--google-client-secret-file", secret}, envOf(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.provider("google").ClientSecret != "s3cret-value" {
		t.Errorf("secret from file = %q", c.provider("google").ClientSecret)
	}
	if c.provider("google").RedirectURL != "http://localhost:8080/auth/callback/google" {
		t.Errorf("default redirect URL = %q", c.provider("google").RedirectURL)
	}
	_, err = parseServe([]string{"--upstream", "http://127.0.0.1:3000", "--smtp-password", "x", "--smtp-password-file", secret}, envOf(nil), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--smtp-password") {
		t.Errorf("secret given twice: err = %v", err)
	}
}

func TestParseDerivedDefaults(t *testing.T) {
	c, err := parseServe([]string{"--upstream", "http://127.0.0.1:3000", "--base-url", "https://app.example.com/"}, envOf(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if !c.CookieSecure || c.SMTP.From != "gatehouse@app.example.com" || c.BaseURL.String() != "https://app.example.com" {
		t.Errorf("https base URL: secure=%v from=%q base=%q", c.CookieSecure, c.SMTP.From, c.BaseURL)
	}
	c, err = parseServe([]string{"--upstream", "http://127.0.0.1:3000", "--base-url", "https://app.example.com", "--cookie-secure=false"}, envOf(nil), &bytes.Buffer{})
	if err != nil || c.CookieSecure {
		t.Errorf("--cookie-secure=false must win: %v %v", c.CookieSecure, err)
	}
	c, err = parseServe([]string{"--upstream", "http://127.0.0.1:3000", "--tls-domain", "a.example.com", "--tls-domain", "b.example.com", "--db", "/var/lib/g/gatehouse.db"}, envOf(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL.String() != "https://a.example.com" || c.TLS.HTTPListen != ":80" || c.TLS.Storage != "/var/lib/g/gatehouse-certs" || !c.CookieSecure {
		t.Errorf("ACME defaults: base=%s http=%q storage=%q secure=%v", c.BaseURL, c.TLS.HTTPListen, c.TLS.Storage, c.CookieSecure)
	}
}

func TestParseRejectsBadValues(t *testing.T) {
	up := []string{"--upstream", "http://127.0.0.1:3000"}
	tests := []struct {
		args []string
		flag string
	}{
		{[]string{}, "--upstream"},
		{[]string{"--upstream", "127.0.0.1:3000"}, "--upstream"},
		{[]string{"--upstream", "ftp://x"}, "--upstream"},
		{append(up, "--mode", "deny"), "--mode"},
		{append(up, "--base-url", "localhost:8080"), "--base-url"},
		{append(up, "--base-url", "//localhost"), "--base-url"},
		{append(up, "--session-ttl", "-1h"), "--session-ttl"},
		{append(up, "--session-ttl", "0"), "--session-ttl"},
		{append(up, "--session-idle-ttl", "-5m"), "--session-idle-ttl"},
		{append(up, "--reset-token-ttl", "-1s"), "--reset-token-ttl"},
		{append(up, "--reset-token-ttl", "soon"), "--reset-token-ttl"},
		{append(up, "--password-min-length", "4"), "--password-min-length"},
		{append(up, "--smtp-tls", "ssl"), "--smtp-tls"},
		{append(up, "--smtp-addr", "mail.example.com"), "--smtp-addr"},
		{append(up, "--base-url", "http://10.0.0.1:8080", "--smtp-addr", "mail:25"), "--smtp-from"},
		{append(up, "--listen", "8080"), "--listen"},
		{append(up, "--smtp-addr", "mail.example.com:25", "--smtp-tls", "none", "--smtp-username", "u"), "--smtp-tls"},
		{append(up, "--public-path", "static"), "--public-path"},
		{append(up, "--public-path", "/auth/x"), "--public-path"},
		{append(up, "--public-path", "/static;x"), "--public-path"},
		{append(up, "--public-path", "/static?x=1"), "--public-path"},
		{append(up, "--tls-cert", "/no/such/cert.pem", "--tls-key", "/no/such/key.pem", "--base-url", "https://localhost"), "--tls-cert"},
		{append(up, "--tls-domain", "a.example.com", "--acme-ca-root", "/no/such/root.pem"), "--acme-ca-root"},
		{append(up, "--mail-templates", "/no/such/dir"), "--mail-templates"},
		{append(up, "--trusted-proxies", "10.0.0.0/33"), "--trusted-proxies"},
		{append(up, "--log-level", "loud"), "--log-level"},
		{append(up, "--log-format", "xml"), "--log-format"},
		{append(up, "--cookie-name", "a b"), "--cookie-name"},
		{append(up, "--google-client-id", "id"), "--google-client-secret"},
		{append(up, "--github-client-secret", "s"), "--github-client-id"},
		{append(up, "--github-client-id", "id", "--github-client-secret", "s", "--github-redirect-url", "http://localhost:8080/callback"), "--github-redirect-url"},
		{append(up, "--oidc-client-id", "id", "--oidc-client-secret", "s"), "--oidc-issuer-url"},
		{append(up, "--oidc-issuer-url", "https://idp.example", "--oidc-client-secret", "s"), "--oidc-client-id"},
		{append(up, "--oidc-issuer-url", "https://idp.example", "--oidc-client-id", "id"), "--oidc-client-secret"},
		{append(up, "--oidc-issuer-url", "http://idp.example", "--oidc-client-id", "id", "--oidc-client-secret", "s"), "--oidc-issuer-url"},
		{append(up, "--oidc-issuer-url", "idp.example", "--oidc-client-id", "id", "--oidc-client-secret", "s"), "--oidc-issuer-url"},
		{append(up, "--oidc-issuer-url", "https://idp.example", "--oidc-client-id", "id", "--oidc-client-secret", "s", "--oidc-scopes", "email profile"), "--oidc-scopes"},
		{append(up, "--oidc-issuer-url", "https://idp.example", "--oidc-client-id", "id", "--oidc-client-secret", "s", "--oidc-redirect-url", "https://evil.example/auth/callback/oidc"), "--oidc-redirect-url"},
		{append(up, "--google-client-id", "id", "--google-client-secret", "s", "--google-jwks-url", "http://keys.example/certs"), "--google-jwks-url"},
		{append(up, "--google-client-id", "id", "--google-client-secret", "s", "--google-token-url", "http://oauth2.example/token"), "--google-token-url"},
		{append(up, "--github-client-id", "id", "--github-client-secret", "s", "--github-api-url", "http://api.example"), "--github-api-url"},
		{append(up, "--github-client-id", "id", "--github-client-secret", "s", "--github-team", "acme"), "--github-team"},
		{append(up, "--tls-cert", "c.pem"), "--tls-cert"},
		{append(up, "--tls-domain", "a.example.com", "--base-url", "http://a.example.com"), "--base-url"},
		{append(up, "--tls-cert", "c.pem", "--tls-key", "k.pem", "--base-url", "http://localhost:8080"), "--base-url"},
		{append(up, "--http-listen", ":80"), "--http-listen"},
		{append(up, "--no-such-flag"), "--no-such-flag"},
		{append(up, "--assertion-ttl", "1s"), "--assertion-ttl"},
		{append(up, "--assertion-ttl", "48h"), "--assertion-ttl"},
		{append(up, "--assertion-audience", "a b"), "--assertion-audience"},
		{append(up, "--identity-assertion=maybe"), "--identity-assertion"},
		{append(up, "--forward-auth-trusted", "nonsense"), "--forward-auth-trusted"},
		{append(up, "--base-url", "https://app.example.com", "--cookie-domain", "other.com"), "--cookie-domain"},
		{append(up, "--base-url", "https://app.example.com", "--cookie-domain", "com"), "--cookie-domain"},
		{append(up, "--base-url", "https://app.example.com", "--allowed-redirect-host", "b.example.com"), "--allowed-redirect-host"},
		{append(up, "--base-url", "https://app.example.com", "--cookie-domain", "example.com", "--allowed-redirect-host", "evil.com"), "--allowed-redirect-host"},
		{append(up, "--base-url", "https://app.example.com", "--cookie-domain", "example.com", "--allowed-redirect-host", "b.example.com:8443"), "--allowed-redirect-host"},
	}
	for _, tt := range tests {
		_, err := parseServe(tt.args, envOf(nil), &bytes.Buffer{})
		if err == nil {
			t.Errorf("%q: accepted", tt.args)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tt.flag) || strings.Contains(msg, "\n") {
			t.Errorf("%q: error %q does not name %s on one line", tt.args, msg, tt.flag)
		}
	}
}

func TestRedirectURLMismatchNamesBothAddresses(t *testing.T) {
	_, err := parseServe([]string{"--upstream", "http://127.0.0.1:3000", "--google-client-id", "id", "--google-client-secret", "s",
		"--google-redirect-url", "https://evil.example/auth/callback/google"}, envOf(nil), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "https://evil.example/auth/callback/google") || !strings.Contains(err.Error(), "http://localhost:8080/auth/callback/google") {
		t.Fatalf("err = %v", err)
	}
}

func TestHelpExplainsEveryFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"--help"}, strings.NewReader(""), &out, &errOut, envOf(nil)); code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	fs, _ := serveFlags(&bytes.Buffer{})
	for _, name := range allFlagNames(fs) {
		f := fs.Lookup(name)
		if f.Usage == "" || !strings.Contains(out.String(), "--"+name) {
			t.Errorf("--help does not explain --%s", name)
		}
	}
	if !strings.Contains(out.String(), "GATEHOUSE_") {
		t.Error("--help does not mention the environment variables")
	}
}

func TestBadFlagStopsBeforeAnythingOpens(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "g.db")
	var out, errOut bytes.Buffer
	code := run([]string{"--upstream", "http://127.0.0.1:3000", "--db", db, "--mode", "maybe"}, strings.NewReader(""), &out, &errOut, envOf(nil))
	if code == 0 {
		t.Fatal("exit 0 on a bad flag")
	}
	if lines := strings.Split(strings.TrimSpace(errOut.String()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "--mode") {
		t.Errorf("stderr = %q, want one line naming --mode", errOut.String())
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("the database was created before the flags were checked: %v", err)
	}
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if code := run([]string{"version"}, nil, &out, &out, envOf(nil)); code != 0 || !strings.HasPrefix(out.String(), "gatehouse ") {
		t.Errorf("version: %d %q", code, out.String())
	}
}

func allFlagNames(fs interface {
	VisitAll(func(*pflag.Flag))
}) []string {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	return names
}

// A URL flag refused for its user info does not print the password.
func TestURLErrorHidesPassword(t *testing.T) {
	_, err := parseServe([]string{"--upstream", "http://admin:s3cret@127.0.0.1:3000"}, envOf(nil), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--upstream") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("err = %v", err)
	}
}

// TestAdminSocketDefaultPerBackend: the admin socket is gatehouse.sock beside
// a bbolt --db and none for a postgres:// one (the users and sessions
// commands then work on the database); an explicit value always wins.
func TestAdminSocketDefaultPerBackend(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--db", "/var/lib/gatehouse/g.db"}, "/var/lib/gatehouse/gatehouse.sock"},
		{[]string{"--db", "postgres://gh@db.internal/gatehouse"}, ""},
		{[]string{"--db", "postgresql:///gatehouse?host=/run/postgresql"}, ""},
		{[]string{"--db", "postgres://gh@db.internal/gatehouse", "--admin-socket", "/run/gh.sock"}, "/run/gh.sock"},
	} {
		c, err := parseServe(append([]string{"--upstream", "http://127.0.0.1:3000", "--base-url", "http://localhost:8080"}, tc.args...), envOf(nil), &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if c.AdminSocket != tc.want {
			t.Errorf("%v: admin socket %q, want %q", tc.args, c.AdminSocket, tc.want)
		}
	}
}
