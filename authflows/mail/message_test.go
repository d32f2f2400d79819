package mail_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/mail"
	"github.com/gatehouse-auth/gatehouse/authflows/mail/mailtest"
)

func TestMessageRefusesHeaderInjection(t *testing.T) {
	for name, mutate := range map[string]func(*struct{ to, subject string }){
		"bcc in to":         func(m *struct{ to, subject string }) { m.to = "alice@example.com\r\nBcc: eve@example.com" },
		"display name":      func(m *struct{ to, subject string }) { m.to = "Eve <eve@example.com>" },
		"two recipients":    func(m *struct{ to, subject string }) { m.to = "alice@example.com, eve@example.com" },
		"newline subject":   func(m *struct{ to, subject string }) { m.subject = "Hi\nBcc: eve@example.com" },
		"carriage subject":  func(m *struct{ to, subject string }) { m.subject = "Hi\rX: y" },
		"empty recipient":   func(m *struct{ to, subject string }) { m.to = "" },
		"not an address at": func(m *struct{ to, subject string }) { m.to = "alice" },
	} {
		f := struct{ to, subject string }{"alice@example.com", "Hello"}
		mutate(&f)
		m := testMail()
		m.To, m.Subject = f.to, f.subject
		if _, err := mail.Message(m, "g@example.com", time.Now()); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestMessageFormat(t *testing.T) {
	m := testMail()
	m.Subject = "Réinitialisez votre mot de passe ✓"
	m.Text = strings.Repeat("a long line of text ", 20) + "\nhttps://gate.example.com/auth/reset?token=" + strings.Repeat("x", 43) + "\n"
	raw, err := mail.Message(m, "Gatehouse <gatehouse@gate.example.com>", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range bytes.SplitAfter(raw, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if !bytes.HasSuffix(line, []byte("\r\n")) {
			t.Fatalf("line %d does not end in CRLF: %q", i, line)
		}
		if len(line) > 78 {
			t.Fatalf("line %d longer than 78 characters: %q", i, line)
		}
		for _, b := range line {
			if b >= 0x80 {
				t.Fatalf("line %d is not 7-bit: %q", i, line)
			}
		}
	}
	p, err := mailtest.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if p.Subject != m.Subject || p.Text != m.Text || p.HTML != m.HTML {
		t.Fatalf("round trip changed the message: %+v", p)
	}
	again, _ := mail.Message(m, "Gatehouse <gatehouse@gate.example.com>", time.Now().Add(time.Hour))
	p2, _ := mailtest.Parse(again)
	if p.Header.Get("Message-ID") != p2.Header.Get("Message-ID") || p.Header.Get("Date") != p2.Header.Get("Date") {
		t.Fatal("Message-ID or Date differ between two renderings of one queued record")
	}
	if d, err := p.Header.Date(); err != nil || !d.Equal(m.CreatedAt) {
		t.Fatalf("Date %v (%v), want %v", d, err, m.CreatedAt)
	}
	if p.Header.Get("Auto-Submitted") != "auto-generated" {
		t.Fatal("no Auto-Submitted header")
	}
}
