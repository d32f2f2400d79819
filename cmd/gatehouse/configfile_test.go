package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/route"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// writeConfig writes a configuration file in a new folder and returns its path.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gatehouse.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The file ranks below the command line and the environment and above
// the defaults; a list set at a higher level replaces the file's.
func TestConfigFilePrecedence(t *testing.T) {
	path := writeConfig(t, `
upstream: http://127.0.0.1:3000
listen: 127.0.0.1:7001
mode: "401"
public-path: [/from-file, /also-file]
allow-email-domain: [corp.com, .eu.corp.com]
session-ttl: 1h
session-idle-ttl: 0
access-log: false
password-min-length: 14
trusted-proxies: [10.0.0.0/8]
routes:
  - path: /static/
    allow: public
`)
	c, err := parseServe([]string{"--config", path}, envOf(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"upstream", c.Upstream.String(), "http://127.0.0.1:3000"},
		{"listen", c.Listen, "127.0.0.1:7001"},
		{"mode", c.Mode, web.Mode401},
		{"public-path", strings.Join(c.PublicPaths, " "), "/from-file /also-file"},
		{"allow-email-domain", strings.Join(c.Policy.EmailDomains, " "), "corp.com .eu.corp.com"},
		{"session-ttl", c.SessionTTL, time.Hour},
		{"session-idle-ttl", c.SessionIdleTTL, time.Duration(0)},
		{"access-log", c.AccessLog, false},
		{"password-min-length", c.PasswordMinLength, 14},
		{"trusted-proxies", len(c.TrustedProxies), 1},
		{"default kept", c.ResetTokenTTL, 30 * time.Minute},
		{"routes", len(c.Routes), 1},
		{"config", c.ConfigFile, path},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}

	// The environment wins over the file, the command line over both; a
	// list from a higher level replaces the file's, it is not merged.
	env := envOf(map[string]string{"GATEHOUSE_LISTEN": "127.0.0.1:7002", "GATEHOUSE_PUBLIC_PATH": "/from-env", "GATEHOUSE_MODE": "redirect"})
	c, err = parseServe([]string{"--mode", "401", "--allow-email-domain", "cli.com"}, mergeEnv(env, "GATEHOUSE_CONFIG", path), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:7002" || strings.Join(c.PublicPaths, " ") != "/from-env" || c.Mode != web.Mode401 || strings.Join(c.Policy.EmailDomains, " ") != "cli.com" {
		t.Errorf("precedence: listen %q, public paths %q, mode %q, domains %q", c.Listen, c.PublicPaths, c.Mode, c.Policy.EmailDomains)
	}
	if c.Upstream.String() != "http://127.0.0.1:3000" || c.SessionTTL != time.Hour {
		t.Errorf("the file's other keys were lost: upstream %v, session-ttl %v", c.Upstream, c.SessionTTL)
	}
	// An empty list in the file is an empty list, not the default.
	c, err = parseServe([]string{"--config", writeConfig(t, "upstream: http://127.0.0.1:3000\npublic-path: []\n")}, envOf(nil), &bytes.Buffer{})
	if err != nil || len(c.PublicPaths) != 0 {
		t.Errorf("public-path: [] gives %q, %v", c.PublicPaths, err)
	}
	// An empty file sets nothing.
	if _, err := parseServe(slices.Concat(upstreamArg, []string{"--config", writeConfig(t, "# nothing yet\n")}), envOf(nil), &bytes.Buffer{}); err != nil {
		t.Errorf("an empty file: %v", err)
	}
}

func mergeEnv(env environ, k, v string) environ {
	out := environ{k: v}
	for key, value := range env {
		out[key] = value
	}
	return out
}

// Secrets come from the file only as their -file forms; a secret given at
// a higher level wins over the file's -file form without a conflict.
func TestConfigFileSecrets(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "smtp-password")
	if err := os.WriteFile(secret, []byte("s3cret-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := writeConfig(t, "upstream: http://127.0.0.1:3000\nsmtp-addr: mail.example.com:587\nsmtp-username: gate\nsmtp-password-file: "+secret+"\n")
	c, err := parseServe([]string{"--config", path}, envOf(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.SMTP.Password != "s3cret-from-file" {
		t.Errorf("smtp password = %q, want the file's", c.SMTP.Password)
	}
	c, err = parseServe([]string{"--config", path}, envOf(map[string]string{"GATEHOUSE_SMTP_PASSWORD": "from-env"}), &bytes.Buffer{})
	if err != nil || c.SMTP.Password != "from-env" {
		t.Errorf("with GATEHOUSE_SMTP_PASSWORD: password %q, %v; want the environment's", c.SMTP.Password, err)
	}
}

// Every mistake in the file stops the start: exit 2, one line naming the
// file, the line and the key; nothing is created.
func TestConfigFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		want          string // in the one line, after "FILE:"
	}{
		{"unknown key", "upstream: http://127.0.0.1:3000\nupstrem: x\n", `2: unknown key "upstrem" (did you mean upstream?)`},
		{"unknown key, no near miss", "colour: blue\n", `1: unknown key "colour"`},
		{"repeated key", "upstream: http://127.0.0.1:3000\nlisten: :1\nlisten: :2\n", "3: listen: repeated (first at line 2)"},
		{"string for a bool", "access-log: \"no\"\n", `1: access-log: want true or false, not "no"`},
		{"yes for a bool", "access-log: yes\n", `1: access-log: want true or false, not "yes"`},
		{"bool for a string", "upstream: true\n", "1: upstream: want a string, not the boolean true"},
		{"scalar for a list", "public-path: /static\n", `1: public-path: want a list, such as [/static], not "/static"`},
		{"number for a duration", "session-ttl: 60\n", "1: session-ttl: want a duration such as 30s or 15m, not the number 60"},
		{"word for a number", "password-min-length: twelve\n", `1: password-min-length: want a whole number, not "twelve"`},
		{"no value", "upstream:\n", "1: upstream: want a string"},
		{"mapping for a string", "listen:\n  host: x\n", "2: listen: want a string"},
		{"bad duration", "upstream: http://127.0.0.1:3000\nsession-ttl: soon\n", `2: session-ttl: "soon": want a duration`},
		{"bad value", "upstream: http://127.0.0.1:3000\nmode: fast\n", `2: mode: "fast": want redirect or 401`},
		{"bad URL", "upstream: ftp://example.com\n", "1: upstream:"},
		{"bad list item", "upstream: http://127.0.0.1:3000\npublic-path: [/ok, /auth/x]\n", "2: public-path:"},
		{"bad domain", "upstream: http://127.0.0.1:3000\nallow-email-domain: [corp..com]\n", "2: allow-email-domain:"},
		{"negative duration", "upstream: http://127.0.0.1:3000\nsession-ttl: -1h\n", "2: session-ttl:"},
		{"bad route", "upstream: http://127.0.0.1:3000\nroutes:\n  - path: /a\n    allow: pubic\n", `4: routes: allow: "pubic": want public, authenticated or deny (did you mean public?)`},
		{"route without slash", "upstream: http://127.0.0.1:3000\nroutes:\n  - path: a/\n", "3: routes: path:"},
		{"raw secret", "smtp-password: hunter2\n", "1: smtp-password: a secret is not read from the configuration file"},
		{"raw client secret", "oidc-client-secret: hunter2\n", "1: oidc-client-secret: a secret"},
		{"config in config", "config: other.yaml\n", "1: config: the configuration file cannot name another"},
		{"not YAML", "upstream: [http://x\n", "1: not valid YAML"},
		{"tab indent", "routes:\n\t- path: /a\n", "2: not valid YAML"},
		{"two documents", "upstream: http://127.0.0.1:3000\n---\nlisten: :1\n", "2: a second YAML document"},
		{"a list at the top", "- upstream\n", "1: want settings as key: value lines"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.content)
			db := filepath.Join(filepath.Dir(path), "g.db")
			var out, errOut bytes.Buffer
			code := run([]string{"--config", path, "--db", db}, strings.NewReader(""), &out, &errOut, envOf(nil))
			if code != exitUsage {
				t.Fatalf("exit %d, want 2; stderr %q", code, errOut.String())
			}
			msg := strings.TrimSuffix(errOut.String(), "\n")
			if strings.Contains(msg, "\n") || !strings.Contains(msg, path+":"+tc.want) {
				t.Fatalf("stderr %q\nwant one line containing %q", errOut.String(), path+":"+tc.want)
			}
			if strings.Contains(msg, "hunter2") {
				t.Fatalf("the error repeats the secret: %q", msg)
			}
			if _, err := os.Stat(db); !os.IsNotExist(err) {
				t.Fatalf("the database was created: %v", err)
			}
		})
	}
	// A missing file names --config.
	var errOut bytes.Buffer
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	if code := run([]string{"--config", missing}, strings.NewReader(""), &bytes.Buffer{}, &errOut, envOf(nil)); code != exitUsage || !strings.Contains(errOut.String(), "invalid --config") || !strings.Contains(errOut.String(), missing) {
		t.Errorf("missing file: exit %d, stderr %q", code, errOut.String())
	}
}

// A bad value at a higher level than the file is reported as before, not at
// a line of the file.
func TestConfigFileErrorsAboveTheFile(t *testing.T) {
	path := writeConfig(t, "upstream: http://127.0.0.1:3000\nmode: redirect\n")
	_, err := parseServe([]string{"--config", path, "--mode", "fast"}, envOf(nil), &bytes.Buffer{})
	if err == nil || !strings.HasPrefix(err.Error(), "invalid --mode:") {
		t.Fatalf("err = %v, want the flag's own error", err)
	}
}

// Every server flag can be set in the file under its name (the secrets by
// their -file forms), so a new flag needs nothing more to be there.
func TestConfigFileTakesEveryFlag(t *testing.T) {
	fs, _ := serveFlags(&bytes.Buffer{})
	known := fileKeys(fs)
	for _, name := range allFlagNames(fs) {
		switch {
		case name == "help" || name == "config":
			if known[name] {
				t.Errorf("%s is a key of the file", name)
			}
		case isSecretFlag(fs, name):
			if known[name] || !known[name+"-file"] {
				t.Errorf("secret %s: key %t, its -file form %t; want only the -file form", name, known[name], known[name+"-file"])
			}
		case !known[name]:
			t.Errorf("flag --%s cannot be set in the file", name)
		}
	}
	if !known["routes"] {
		t.Error("routes is not a key")
	}
}

// The route rules of the file come after the --public-path rules.
func TestConfigFileRoutes(t *testing.T) {
	path := writeConfig(t, "upstream: http://127.0.0.1:3000\npublic-path: [/health]\nroutes:\n  - path: /admin/\n    groups: [oidc:admins]\n  - path: /\n    allow: deny\n")
	c, err := parseServe([]string{"--config", path}, envOf(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	tab, err := route.NewTable(c.PublicPaths, c.Routes)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"/health": "--public-path", "/admin/x": path + ":4", "/other": path + ":6"} {
		if got := tab.Match("h", "GET", p).Source; got != want {
			t.Errorf("%s: rule %q, want %q", p, got, want)
		}
	}
}

// The subcommands read their flags (--db, --admin-socket, --mail-dir) from
// the server's configuration file too, so that GATEHOUSE_CONFIG alone
// points them at the server's database; the command line still wins.
func TestSubcommandsReadTheConfigFile(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "from-file.db")
	path := writeConfig(t, "upstream: http://127.0.0.1:3000\ndb: "+db+"\nadmin-socket: \"\"\nmail-dir: "+filepath.Join(dir, "maildir")+"\nroutes:\n  - path: /a/\n    allow: public\n")
	var out, errOut bytes.Buffer
	code := run([]string{"users", "add", "--email", "ann@example.com", "--password-stdin"}, strings.NewReader(testPassword+"\n"), &out, &errOut, envOf(map[string]string{"GATEHOUSE_CONFIG": path}))
	if code != 0 {
		t.Fatalf("users add: exit %d, %s", code, errOut.String())
	}
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("the file's --db was not used: %v", err)
	}
	code, list, _ := cliEnv(t, nil, "users", "list", "--config", path)
	if code != 0 || !strings.Contains(list, "ann@example.com") {
		t.Fatalf("users list --config: exit %d, %q", code, list)
	}
	other := filepath.Join(dir, "other.db")
	addUser(t, other, "bob@example.com", testPassword)
	if code, list, _ := cliEnv(t, nil, "users", "list", "--config", path, "--db", other); code != 0 || !strings.Contains(list, "bob@example.com") {
		t.Fatalf("the command line must win over the file: exit %d, %q", code, list)
	}
	if code, _, errOut := cliEnv(t, nil, "mail", "show", "--config", path); code == 0 || !strings.Contains(errOut, "maildir") {
		t.Errorf("mail show did not look in the file's --mail-dir: exit %d, %q", code, errOut)
	}
	// A broken file stops a subcommand as it stops the server.
	bad := writeConfig(t, "db: "+db+"\ndbb: x\n")
	if code, _, errOut := cliEnv(t, nil, "users", "list", "--config", bad); code != exitUsage || !strings.Contains(errOut, bad+`:2: unknown key "dbb"`) {
		t.Errorf("broken file: exit %d, %q", code, errOut)
	}
}
