package mail_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/authflows/mail"
	"github.com/gatehouse-auth/gatehouse/authflows/mail/mailtest"
)

func TestDirWritesParsableEML(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mail")
	d, err := mail.NewDir(dir, "Gatehouse <gatehouse@gate.example.com>")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("mail dir: %v %v, want mode 0700", fi.Mode(), err)
	}
	m := testMail()
	m.Subject = "Passwort zurücksetzen"
	for range 2 { // a second delivery of the same record replaces the file
		if err := send(t, d, m); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || !strings.HasSuffix(entries[0].Name(), ".eml") {
		t.Fatalf("directory holds %v, want one .eml file and no temporary files", entries)
	}
	path := filepath.Join(dir, entries[0].Name())
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v (%v), want 0600", fi.Mode(), err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := mailtest.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	h := p.Header
	if _, err := h.Date(); err != nil {
		t.Errorf("Date: %v", err)
	}
	if id := h.Get("Message-ID"); !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, "@gate.example.com>") {
		t.Errorf("Message-ID %q", id)
	}
	if from, err := h.AddressList("From"); err != nil || len(from) != 1 || from[0].Address != "gatehouse@gate.example.com" || from[0].Name != "Gatehouse" {
		t.Errorf("From %v %v", from, err)
	}
	if to, err := h.AddressList("To"); err != nil || len(to) != 1 || to[0].Address != "alice@example.com" {
		t.Errorf("To %v %v", to, err)
	}
	if h.Get("MIME-Version") != "1.0" {
		t.Errorf("MIME-Version %q", h.Get("MIME-Version"))
	}
	if p.Subject != m.Subject || p.Text != m.Text || p.HTML != m.HTML {
		t.Errorf("content changed: %+v", p)
	}
}

func TestNewDirChecksFrom(t *testing.T) {
	if _, err := mail.NewDir(t.TempDir(), "not an address"); err == nil {
		t.Fatal("bad From accepted")
	}
	if _, err := mail.NewDir("", "g@example.com"); err == nil {
		t.Fatal("empty directory accepted")
	}
}
