package mail_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/mail"
	"github.com/gatehouse-auth/gatehouse/authflows/mail/mailtest"
	"github.com/gatehouse-auth/gatehouse/storage"
)

func testMail() storage.Mail {
	return storage.Mail{
		ID:        7,
		To:        "alice@example.com",
		Subject:   "Reset your password",
		Text:      "Open https://gate.example.com/auth/reset?token=abc\nBye.\n",
		HTML:      "<p><a href=\"https://gate.example.com/auth/reset?token=abc\">Reset</a></p>\n",
		CreatedAt: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

func newSMTP(t *testing.T, cfg mail.SMTPConfig) *mail.SMTP {
	t.Helper()
	if cfg.From == "" {
		cfg.From = "Gatehouse <gatehouse@gate.example.com>"
	}
	s, err := mail.NewSMTP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func send(t *testing.T, s mail.Sender, m storage.Mail) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Send(ctx, m)
}

func TestSMTPDeliversMessage(t *testing.T) {
	srv := mailtest.NewServer(t, mailtest.Options{})
	s := newSMTP(t, mail.SMTPConfig{Addr: srv.Addr, TLS: mail.TLSNone})
	if err := send(t, s, testMail()); err != nil {
		t.Fatal(err)
	}
	got := srv.Next(t, 5*time.Second)
	if got.From != "gatehouse@gate.example.com" || len(got.To) != 1 || got.To[0] != "alice@example.com" {
		t.Fatalf("envelope from %q to %v", got.From, got.To)
	}
	p, err := mailtest.Parse(got.Data)
	if err != nil {
		t.Fatal(err)
	}
	want := testMail()
	if p.Subject != want.Subject || p.Text != want.Text || p.HTML != want.HTML {
		t.Fatalf("received %+v", p)
	}
	if p.Header.Get("To") != "<alice@example.com>" || !strings.Contains(p.Header.Get("From"), "<gatehouse@gate.example.com>") {
		t.Fatalf("headers: %v", p.Header)
	}
}

func TestSMTPAuthPlain(t *testing.T) {
	srv := mailtest.NewServer(t, mailtest.Options{Username: "relay-user", Password: "relay-secret"})

	good := newSMTP(t, mail.SMTPConfig{Addr: srv.Addr, TLS: mail.TLSNone, Username: "relay-user", Password: "relay-secret"})
	if err := send(t, good, testMail()); err != nil {
		t.Fatal(err)
	}
	if got := srv.Next(t, 5*time.Second); got.AuthUser != "relay-user" {
		t.Fatalf("AUTH user %q", got.AuthUser)
	}

	bad := newSMTP(t, mail.SMTPConfig{Addr: srv.Addr, TLS: mail.TLSNone, Username: "relay-user", Password: "wrong"})
	if err := send(t, bad, testMail()); err == nil || errors.Is(err, mail.ErrPermanent) {
		t.Fatalf("wrong password: err = %v, want a retryable error", err)
	}
	anonymous := newSMTP(t, mail.SMTPConfig{Addr: srv.Addr, TLS: mail.TLSNone})
	if err := send(t, anonymous, testMail()); err == nil {
		t.Fatal("no AUTH against a relay that requires it: no error")
	}
	srv.None(t, 100*time.Millisecond)
}

func TestSMTPStartTLS(t *testing.T) {
	srv := mailtest.NewServer(t, mailtest.Options{StartTLS: true, Username: "u", Password: "p"})
	s := newSMTP(t, mail.SMTPConfig{Addr: srv.Addr, TLS: mail.TLSStartTLS, TLSConfig: srv.ClientTLS(), Username: "u", Password: "p"})
	if err := send(t, s, testMail()); err != nil {
		t.Fatal(err)
	}
	if got := srv.Next(t, 5*time.Second); !got.TLS || got.AuthUser != "u" {
		t.Fatalf("tls=%v auth=%q", got.TLS, got.AuthUser)
	}

	untrusted := newSMTP(t, mail.SMTPConfig{Addr: srv.Addr, TLS: mail.TLSStartTLS, Username: "u", Password: "p"})
	if err := send(t, untrusted, testMail()); err == nil {
		t.Fatal("self-signed certificate accepted without being trusted")
	}
	srv.None(t, 100*time.Millisecond)
}

func TestSMTPStartTLSIsNotOptional(t *testing.T) {
	srv := mailtest.NewServer(t, mailtest.Options{}) // offers no STARTTLS
	s := newSMTP(t, mail.SMTPConfig{Addr: srv.Addr}) // default mode: starttls
	err := send(t, s, testMail())
	if err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Fatalf("err = %v, want a refusal naming STARTTLS", err)
	}
	srv.None(t, 100*time.Millisecond)
}

func TestSMTPImplicitTLS(t *testing.T) {
	srv := mailtest.NewServer(t, mailtest.Options{ImplicitTLS: true})
	s := newSMTP(t, mail.SMTPConfig{Addr: srv.Addr, TLS: mail.TLSImplicit, TLSConfig: srv.ClientTLS()})
	if err := send(t, s, testMail()); err != nil {
		t.Fatal(err)
	}
	if got := srv.Next(t, 5*time.Second); !got.TLS {
		t.Fatal("message not received over TLS")
	}
}

func TestNewSMTPRefusesCleartextAuthToRemoteRelay(t *testing.T) {
	_, err := mail.NewSMTP(mail.SMTPConfig{Addr: "mail.example.com:25", TLS: mail.TLSNone, Username: "u", Password: "p", From: "g@example.com"})
	if err == nil {
		t.Fatal("AUTH without TLS to a remote relay accepted")
	}
	for _, addr := range []string{"127.0.0.1:25", "localhost:25", "[::1]:25"} {
		if _, err := mail.NewSMTP(mail.SMTPConfig{Addr: addr, TLS: mail.TLSNone, Username: "u", From: "g@example.com"}); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	for _, cfg := range []mail.SMTPConfig{
		{Addr: "no-port", From: "g@example.com"},
		{Addr: "h:25", From: "not an address"},
		{Addr: "h:25", From: "g@example.com", TLS: "ssl"},
	} {
		if _, err := mail.NewSMTP(cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

func TestSMTPRejectedRecipientIsPermanent(t *testing.T) {
	srv := mailtest.NewServer(t, mailtest.Options{RejectRcpt: []string{"alice@example.com"}})
	s := newSMTP(t, mail.SMTPConfig{Addr: srv.Addr, TLS: mail.TLSNone})
	if err := send(t, s, testMail()); !errors.Is(err, mail.ErrPermanent) {
		t.Fatalf("err = %v, want ErrPermanent", err)
	}
}

func TestSMTPRelayDownIsRetryable(t *testing.T) {
	s := newSMTP(t, mail.SMTPConfig{Addr: reservePort(t), TLS: mail.TLSNone})
	err := send(t, s, testMail())
	if err == nil || errors.Is(err, mail.ErrPermanent) {
		t.Fatalf("err = %v, want a retryable error", err)
	}
}

// A relay that accepts the connection and then says nothing must not hold
// the sender beyond its I/O timeout.
func TestSMTPSilentRelayTimesOut(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	s := newSMTP(t, mail.SMTPConfig{Addr: l.Addr().String(), TLS: mail.TLSNone, IOTimeout: 200 * time.Millisecond})
	done := make(chan error, 1)
	go func() { done <- s.Send(context.Background(), testMail()) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("silent relay: no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Send still waiting for a silent relay after 5s (IOTimeout 200ms)")
	}
}

func TestSMTPCancelAborts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err == nil {
			t.Cleanup(func() { c.Close() })
		}
	}()
	s := newSMTP(t, mail.SMTPConfig{Addr: l.Addr().String(), TLS: mail.TLSNone})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Send(ctx, testMail()) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Send ignored the cancellation")
	}
}

// reservePort returns a loopback address on which nothing listens (yet).
func reservePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
