package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gatehouse config check validates as a start would, opens nothing, and
// prints the settings in force with their sources, secrets as (set).
func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "google-secret")
	if err := os.WriteFile(secretFile, []byte("google-s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "g.db")
	path := writeConfig(t, `upstream: http://127.0.0.1:3000
db: `+db+`
google-client-id: id.apps.example.com
google-client-secret-file: `+secretFile+`
allow-email-domain: [corp.com]
routes:
  - path: /admin/
    groups: [oidc:admins]
`)
	env := envOf(map[string]string{"GATEHOUSE_SMTP_PASSWORD": "smtp-s3cret", "GATEHOUSE_SMTP_ADDR": "mail.example.com:587", "GATEHOUSE_SMTP_USERNAME": "gate", "GATEHOUSE_LISTEN": "127.0.0.1:8080"})
	code, out, errOut := cliEnv(t, env, "config", "check", "--config", path, "--public-path", "/health")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"upstream: http://127.0.0.1:3000  # " + path + ":1",
		"smtp-addr: mail.example.com:587 # GATEHOUSE_SMTP_ADDR",
		"smtp-password: (set)",
		"# GATEHOUSE_SMTP_PASSWORD",
		"google-client-secret: (set) # read from google-client-secret-file",
		"google-client-secret-file: " + secretFile,
		"github-client-secret: (not set)",
		"public-path: [/health]",
		"# command line",
		"listen: 127.0.0.1:8080 # GATEHOUSE_LISTEN",
		"base-url: http://localhost:8080 # default", // derived from --listen, filled in
		"admin-listen: 127.0.0.1:9090 # default",
		"allow-email-domain: [corp.com]",
		"- path: /health, allow: public",
		"# --public-path",
		"- path: /admin/, allow: authenticated, groups: [oidc:admins]",
		"# " + path + ":7",
		"# no match: allow: authenticated",
	} {
		if !strings.Contains(squeeze(out), squeeze(want)) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, secret := range []string{"smtp-s3cret", "google-s3cret"} {
		if strings.Contains(out, secret) {
			t.Errorf("the output shows a secret %q:\n%s", secret, out)
		}
	}
	if strings.Index(out, "/health, allow: public") > strings.Index(out, "/admin/") {
		t.Errorf("the --public-path rule must come first:\n%s", out)
	}
	for _, created := range []string{db, filepath.Join(dir, "gatehouse.sock"), filepath.Join(dir, "mail")} {
		if _, err := os.Stat(created); !os.IsNotExist(err) {
			t.Errorf("config check created %s", created)
		}
	}
}

// squeeze collapses runs of spaces, so that alignment does not matter.
func squeeze(s string) string { return strings.Join(strings.Fields(s), " ") }

func cliEnv(t *testing.T, env environ, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(""), &out, &errOut, env)
	return code, out.String(), errOut.String()
}

// The warnings of a start are printed too, on stderr, without failing.
func TestConfigCheckWarns(t *testing.T) {
	code, _, errOut := cliEnv(t, nil, "config", "check", "--upstream", "http://127.0.0.1:3000")
	if code != 0 || !strings.Contains(errOut, "--base-url names localhost while --listen accepts other hosts") {
		t.Fatalf("exit %d, stderr %q; want 0 and the warning", code, errOut)
	}
}

func TestConfigCheckRefuses(t *testing.T) {
	bad := writeConfig(t, "upstream: http://127.0.0.1:3000\nroutes:\n  - path: /a\n    max-age: soon\n")
	templates := t.TempDir()
	if err := os.WriteFile(filepath.Join(templates, "login.html"), []byte("{{ .Broken "), 0o600); err != nil {
		t.Fatal(err)
	}
	mailTemplates := t.TempDir()
	if err := os.WriteFile(filepath.Join(mailTemplates, "reset.subject.tmpl"), []byte("{{ .Nope "), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  environ
		want string
	}{
		{"bad route", []string{"--config", bad}, nil, bad + `:4: routes: max-age: "soon" is not a duration`},
		{"bad flag", []string{"--upstream", "http://127.0.0.1:3000", "--mode", "fast"}, nil, "invalid --mode"},
		{"bad variable", []string{"--upstream", "http://127.0.0.1:3000"}, envOf(map[string]string{"GATEHOUSE_MODEE": "401"}), "GATEHOUSE_MODEE"},
		{"broken template", []string{"--upstream", "http://127.0.0.1:3000", "--templates-dir", templates}, nil, "login.html"},
		{"broken mail template", []string{"--upstream", "http://127.0.0.1:3000", "--mail-templates", mailTemplates}, nil, "invalid --mail-templates: mail template: template: reset.subject.tmpl:1"},
		{"no upstream", nil, nil, "invalid --upstream: is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := cliEnv(t, tc.env, append([]string{"config", "check"}, tc.args...)...)
			if code != exitUsage || out != "" {
				t.Fatalf("exit %d, stdout %q; want 2 and nothing", code, out)
			}
			if lines := strings.Split(strings.TrimSpace(errOut), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "gatehouse config check: ") || !strings.Contains(lines[0], tc.want) {
				t.Fatalf("stderr %q, want one line with %q", errOut, tc.want)
			}
		})
	}
}

func TestConfigCommandUsage(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		inStdout string
		inStderr string
	}{
		{[]string{"config", "check", "--help"}, 0, "Usage: gatehouse config check", ""},
		{[]string{"config", "--help"}, 0, "Usage: gatehouse config check", ""},
		{[]string{"config"}, 2, "Usage:", ""},
		{[]string{"config", "chek"}, 2, "", `unknown command "chek" (did you mean check?)`},
		{[]string{"config", "check", "--nosuchflag"}, 2, "", "unknown flag --nosuchflag; see gatehouse config check --help"},
		{[]string{"config", "check", "extra", "--upstream", "http://127.0.0.1:3000"}, 2, "", `unknown command "extra"`},
	} {
		code, out, errOut := cliEnv(t, nil, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.inStdout) || !strings.Contains(errOut, tc.inStderr) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", tc.args, code, out, errOut)
		}
	}
}
