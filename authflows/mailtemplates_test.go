package authflows

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// --mail-templates: a file of the same name replaces the embedded template;
// the others stay.
func TestMailTemplatesOverride(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("reset.subject.tmpl", "Custom reset for {{.Email}}\n")
	write("reset.text.tmpl", "Go to {{.Link}} within {{.Lifetime}}. If this wasn't you, ignore this mail.\n")
	write("README.md", "not a template, ignored")

	e := newMailEnv(t, mailEnvConfig{options: []func(*Config){func(c *Config) { c.MailTemplates = dir }}})
	e.CreateUser(t, "alice@example.com", oldPassword)
	m := mailedAfterForgot(t, e, "alice@example.com")
	if m.Subject != "Custom reset for alice@example.com" {
		t.Errorf("subject %q", m.Subject)
	}
	if !strings.HasPrefix(m.Text, "Go to "+testBaseURL+"/auth/reset?token=") {
		t.Errorf("text %q", m.Text)
	}
	if !strings.Contains(m.HTML, "Choose a new password") { // the embedded HTML part
		t.Errorf("html %q", m.HTML)
	}
}

// A broken override stops New instead of the first reset.
func TestMailTemplatesRefused(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"syntax error":     {"reset.text.tmpl": "{{.Link"},
		"unknown field":    {"reset.html.tmpl": "{{.Token}}"},
		"unknown file":     {"reset.txt.tmpl": "typo in the name"},
		"two-line subject": {"password_changed.subject.tmpl": "one\ntwo"},
		"empty subject":    {"reset.subject.tmpl": "  \n"},
	} {
		dir := t.TempDir()
		for f, content := range files {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := loadMailTemplates(dir); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := loadMailTemplates(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing directory accepted")
	}
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		30 * time.Minute:                "30 minutes",
		time.Minute:                     "1 minute",
		time.Hour:                       "1 hour",
		90 * time.Minute:                "1 hour 30 minutes",
		48 * time.Hour:                  "2 days",
		25 * time.Hour:                  "25 hours",
		45 * time.Second:                "45 seconds",
		time.Millisecond:                "1 second",
		2*time.Hour + 59*time.Second:    "2 hours",
		24*time.Hour + 5*time.Minute:    "1 day 5 minutes",
		10*time.Minute + 30*time.Second: "10 minutes",
	} {
		if got := humanDuration(d); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}
