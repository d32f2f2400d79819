package mail_test

import (
	"errors"
	"io"
	"log"
	"net"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/gatehouse-auth/gatehouse/authflows/mail"
)

// An account's address may have a non-ASCII local part (EM1 takes
// printable UTF-8 from providers; `users add` takes Élodie@example.fr and
// stores élodie@example.fr). RFC 6531 3.4: a client that sends a UTF-8
// envelope address (and RFC 6532 headers) MUST declare SMTPUTF8 on MAIL
// FROM, and a relay such as Postfix refuses the RCPT otherwise ("553 5.6.7
// Must declare SMTPUTF8 to send unicode address"); that 5xx would make the
// queue drop the mail as permanently undeliverable, and such a user could
// never get a reset or invitation link.
func TestSMTPDeclaresSMTPUTF8ForUnicodeRecipient(t *testing.T) {
	got := make(chan string, 1)
	srv := smtp.NewServer(utf8Backend{got: got})
	srv.Domain = "relay.local"
	srv.AllowInsecureAuth = true
	srv.EnableSMTPUTF8 = true
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	srv.ErrorLog = log.New(io.Discard, "", 0)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	s := newSMTP(t, mail.SMTPConfig{Addr: l.Addr().String(), TLS: mail.TLSNone})
	m := testMail()
	m.To = "élodie@example.fr"
	err = send(t, s, m)
	if err != nil {
		t.Fatalf("send to %s through a relay that offers SMTPUTF8: %v (permanent: %v), want it delivered", m.To, err, errors.Is(err, mail.ErrPermanent))
	}
	select {
	case to := <-got:
		if to != m.To {
			t.Fatalf("delivered to %q", to)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing delivered")
	}
}

// utf8Backend is a relay that, like Postfix, takes a UTF-8 address only in a
// transaction that declared SMTPUTF8.
type utf8Backend struct{ got chan string }

func (b utf8Backend) NewSession(*smtp.Conn) (smtp.Session, error) {
	return &utf8Session{got: b.got}, nil
}

type utf8Session struct {
	got  chan string
	utf8 bool
	to   string
}

func (s *utf8Session) AuthMechanisms() []string { return nil }
func (s *utf8Session) Mail(_ string, opts *smtp.MailOptions) error {
	s.utf8 = opts != nil && opts.UTF8
	return nil
}

func (s *utf8Session) Rcpt(to string, _ *smtp.RcptOptions) error {
	for i := 0; i < len(to); i++ {
		if to[i] >= 0x80 && !s.utf8 {
			return &smtp.SMTPError{Code: 553, EnhancedCode: smtp.EnhancedCode{5, 6, 7}, Message: "Must declare SMTPUTF8 to send unicode address"}
		}
	}
	s.to = to
	return nil
}

func (s *utf8Session) Data(r io.Reader) error {
	_, _ = io.Copy(io.Discard, r)
	s.got <- s.to
	return nil
}

func (s *utf8Session) Reset()        { s.utf8, s.to = false, "" }
func (s *utf8Session) Logout() error { return nil }
