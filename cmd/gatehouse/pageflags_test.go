package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --templates-dir is checked at start: a missing directory, an unknown file
// or a template that does not parse stops the start with one line naming
// the flag and the file; --app-name defaults to the base URL's host.
func TestPageFlags(t *testing.T) {
	up := []string{"--upstream", "http://127.0.0.1:3000", "--base-url", "https://app.example.com"}
	c, err := parseServe(up, envOf(nil), &bytes.Buffer{})
	if err != nil || c.AppName != "app.example.com" || c.TemplatesDir != "" {
		t.Fatalf("defaults: %+v %v", c.AppName, err)
	}
	c, err = parseServe(up, envOf(map[string]string{"GATEHOUSE_APP_NAME": "Acme Reports"}), &bytes.Buffer{})
	if err != nil || c.AppName != "Acme Reports" {
		t.Fatalf("from the environment: %q %v", c.AppName, err)
	}

	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	os.Mkdir(good, 0o700)
	os.WriteFile(filepath.Join(good, "login.html"), []byte(`{{define "title"}}Hi{{end}}{{define "content"}}<h1>Hi</h1>{{end}}`), 0o600)
	if c, err := parseServe(append(up, "--templates-dir", good), envOf(nil), &bytes.Buffer{}); err != nil || c.TemplatesDir != good {
		t.Fatalf("good dir: %v", err)
	}

	broken := filepath.Join(dir, "broken")
	os.Mkdir(broken, 0o700)
	os.WriteFile(filepath.Join(broken, "reset.html"), []byte(`{{define "content"}}{{if}}{{end}}`), 0o600)
	unknown := filepath.Join(dir, "unknown")
	os.Mkdir(unknown, 0o700)
	os.WriteFile(filepath.Join(unknown, "sigin.html"), []byte(`x`), 0o600)
	badMail := filepath.Join(dir, "mail")
	os.Mkdir(badMail, 0o700)
	os.WriteFile(filepath.Join(badMail, "reset.subject.tmpl"), []byte(`{{.Site`), 0o600)
	for _, tc := range []struct{ dir, names string }{
		{filepath.Join(dir, "missing"), "missing"},
		{broken, filepath.Join(broken, "reset.html")},
		{unknown, "sigin.html"},
		{badMail, "reset.subject.tmpl"},
	} {
		_, err := parseServe(append(up, "--templates-dir", tc.dir), envOf(nil), &bytes.Buffer{})
		if err == nil {
			t.Errorf("%s: accepted", tc.dir)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "--templates-dir") || !strings.Contains(msg, tc.names) || strings.Contains(msg, "\n") {
			t.Errorf("%s: error %q does not name the flag and %s on one line", tc.dir, msg, tc.names)
		}
	}
}
