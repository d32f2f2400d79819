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
		if len(line) > 998+2 {
			t.Fatalf("line %d longer than 998 characters: %q", i, line)
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

// The text of a mail file can be read as it is: an ASCII part goes out
// 7bit, so the reset link is on one line, verbatim, and a grep finds it.
// Parts that are not ASCII, or have lines over 998 characters, stay
// quoted-printable, with lines of at most 78 characters.
func TestMessageKeepsLinksReadable(t *testing.T) {
	link := "https://gate.example.com/auth/reset?token=" + strings.Repeat("x", 43) + "=="
	tests := []struct {
		name, text, encoding string
	}{
		{"ascii", "Open this link:\n\n" + link + "\n", "7bit"},
		{"crlf", "Open this link:\r\n\r\n" + link + "\r\n", "7bit"},
		{"not ascii", "Öffnen Sie diesen Link:\n\n" + link + "\n", "quoted-printable"},
		{"long line", strings.Repeat("y", 999) + "\n" + link + "\n", "quoted-printable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testMail()
			m.Text, m.HTML = tt.text, "<p>plain html</p>\n"
			raw, err := mail.Message(m, "gatehouse@gate.example.com", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			textHeader := "Content-Type: text/plain; charset=utf-8"
			i := bytes.Index(raw, []byte(textHeader))
			if i < 0 {
				t.Fatalf("no text part:\n%s", raw)
			}
			start := bytes.LastIndex(raw[:i], []byte("\r\n--")) // the part's boundary line
			partHeader, _, _ := bytes.Cut(raw[start:], []byte("\r\n\r\n"))
			if !bytes.Contains(partHeader, []byte("Content-Transfer-Encoding: "+tt.encoding+"\r\n")) {
				t.Errorf("text part header %q, want encoding %s", partHeader, tt.encoding)
			}
			if verbatim := bytes.Contains(raw, []byte("\r\n"+link+"\r\n")); verbatim != (tt.encoding == "7bit") {
				t.Errorf("link on a line of its own, verbatim: %t; want %t for %s\n%s", verbatim, !verbatim, tt.encoding, raw)
			}
			if !bytes.Contains(raw, []byte("Content-Transfer-Encoding: 7bit\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>plain html</p>")) {
				t.Errorf("the ASCII HTML part is not 7bit:\n%s", raw)
			}
			for n, line := range bytes.Split(raw, []byte("\r\n")) {
				if bytes.ContainsAny(line, "\r\n") {
					t.Fatalf("line %d has a bare CR or LF: %q", n, line)
				}
				if tt.encoding == "quoted-printable" && len(line) > 78 {
					t.Fatalf("quoted-printable message has line %d longer than 78: %q", n, line)
				}
			}
			p, err := mailtest.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.ReplaceAll(tt.text, "\r\n", "\n")
			if got := strings.ReplaceAll(p.Text, "\r\n", "\n"); got != want {
				t.Errorf("round trip: text %q, want %q", got, want)
			}
		})
	}
}
