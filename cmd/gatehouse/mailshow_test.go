package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/mail"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// `gatehouse mail show` prints a mail file decoded: a quoted-printable part
// (here: not ASCII) comes out with its link whole, and without FILE the
// newest file of --mail-dir is shown.
func TestMailShow(t *testing.T) {
	dir := t.TempDir()
	link := "https://gate.example.com/auth/reset?token=" + strings.Repeat("A", 43)
	write := func(name, subject, text string) string {
		raw, err := mail.Message(storage.Mail{ID: 1, To: "alice@example.com", Subject: subject, Text: text, HTML: "<p>x</p>",
			CreatedAt: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}, "gatehouse@gate.example.com", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(raw, []byte("quoted-printable")) {
			t.Fatalf("the sample is not quoted-printable:\n%s", raw)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	older := write("20300102T030405.000000000Z-1.eml", "Older", "Älter: "+link+"\n")
	write("20300102T030406.000000000Z-2.eml", "Passwort zurücksetzen", "Öffnen Sie diesen Link:\n\n"+link+"\n")

	show := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(append([]string{"mail", "show"}, args...), nil, &out, &errOut, envOf(nil))
		return code, out.String(), errOut.String()
	}
	code, out, errOut := show("--mail-dir", dir)
	if code != 0 || !strings.Contains(out, "Subject: Passwort zurücksetzen\n") || !strings.Contains(out, "Öffnen Sie diesen Link:\n\n"+link+"\n") {
		t.Errorf("mail show (newest): %d %q %q", code, out, errOut)
	}
	code, out, _ = show(older)
	if code != 0 || !strings.Contains(out, "Subject: Older\n") || !strings.Contains(out, "Älter: "+link+"\n") {
		t.Errorf("mail show FILE: %d %q", code, out)
	}
	if code, _, errOut := show("--mail-dir", t.TempDir()); code != 1 || !strings.Contains(errOut, "no .eml file") {
		t.Errorf("empty folder: %d %q", code, errOut)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"mail", "shwo"}, nil, &stdout, &stderr, envOf(nil)); code != 2 ||
		stderr.String() != "gatehouse mail: unknown command \"shwo\" (did you mean show?); see gatehouse mail --help\n" {
		t.Errorf("mail shwo: %d %q", code, stderr.String())
	}
}
