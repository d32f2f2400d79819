package authflows

import (
	"context"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/mail"
	"github.com/gatehouse-auth/gatehouse/authflows/mail/mailtest"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
)

// The reset tests run the whole mail path: the flows queue mail in the bbolt
// store, a mail.Queue prepares it (Handler.PrepareMail) and sends it over SMTP with AUTH to a real go-smtp server
// started in the test, and the tests read what arrived.

const (
	relayUser     = "relay-user"
	relayPassword = "relay-secret-7b1d" // must never be logged either
)

// mailEnv is a testEnv whose mail is delivered to Relay.
type mailEnv struct {
	*testEnv
	Relay     *mailtest.Server // nil while the relay is down
	RelayAddr string
	Queue     *mail.Queue
}

// mailEnvConfig shapes newMailEnv.
type mailEnvConfig struct {
	relayDown bool        // do not start the relay yet (see startRelay)
	store     *bolt.Store // a store of the test's own instead of a fresh one
	options   []func(*Config)
}

func newMailEnv(t *testing.T, mc mailEnvConfig) *mailEnv {
	t.Helper()
	e := &mailEnv{}
	var queue *mail.Queue // set before the first request
	options := []func(*Config){func(c *Config) {
		c.WakeMailer = func() { queue.Wake() }
		if mc.store != nil {
			c.Store = mc.store
		}
	}}
	e.testEnv = newTestEnv(t, append(options, mc.options...)...)
	if mc.store != nil {
		e.Store = mc.store
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.RelayAddr = l.Addr().String()
	l.Close()
	if !mc.relayDown {
		e.startRelay(t)
	}
	sender, err := mail.NewSMTP(mail.SMTPConfig{
		Addr: e.RelayAddr, TLS: mail.TLSNone, Username: relayUser, Password: relayPassword, From: "gatehouse@gatehouse.test",
	})
	if err != nil {
		t.Fatal(err)
	}
	queue = mail.NewQueue(e.Config.Store.(mail.QueueStore), sender, mail.QueueOptions{
		Logger:     e.Config.Logger, // the captured log: LG1 covers the queue too
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, PollInterval: 100 * time.Millisecond,
		Prepare: e.Handler.PrepareMail, // as cmd/gatehouse wires it
	})
	e.Queue = queue
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = queue.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return e
}

// startRelay starts the SMTP server on RelayAddr.
func (e *mailEnv) startRelay(t *testing.T) {
	t.Helper()
	e.Relay = mailtest.NewServer(t, mailtest.Options{Addr: e.RelayAddr, Username: relayUser, Password: relayPassword})
}

// mailed is a message as it arrived at the relay.
type mailed struct {
	To      string // envelope recipient
	Subject string
	Text    string
	HTML    string
	Raw     string
}

// nextMail waits for the next message at the relay.
func (e *mailEnv) nextMail(t *testing.T) mailed {
	t.Helper()
	m := e.Relay.Next(t, 10*time.Second)
	if len(m.To) != 1 {
		t.Fatalf("message to %v, want one recipient", m.To)
	}
	if m.AuthUser != relayUser {
		t.Fatalf("message sent without AUTH as %s", relayUser)
	}
	p, err := mailtest.Parse(m.Data)
	if err != nil {
		t.Fatalf("parse mail: %v\n%s", err, m.Data)
	}
	return mailed{To: m.To[0], Subject: p.Subject, Text: p.Text, HTML: p.HTML, Raw: string(m.Data)}
}

// noMail fails if the flows queued a message the test has not read. It
// waits for the background work and then for the queue to deliver all it
// holds, so a stray message has arrived by the time it looks (a message
// reaches the relay before it leaves the store): no wait decides the result.
func (e *mailEnv) noMail(t *testing.T) {
	t.Helper()
	waitUntil(t, "the mail queue to empty", func() bool {
		due, err := e.Store.DueMail(t.Context(), e.Clock.Now().AddDate(10, 0, 0), 1)
		return err == nil && len(due) == 0
	})
	select {
	case m := <-e.Relay.Messages():
		t.Fatalf("unexpected message to %v", m.To)
	default:
	}
}

// forgot posts {"email": email}, waits for the background work and
// requires the accepted answer.
func (e *mailEnv) forgot(t *testing.T, email string) {
	t.Helper()
	resp := e.PostJSON("/auth/forgot", map[string]string{"email": email})
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("forgot %q: status %d, body %s", email, resp.StatusCode, e.Body(t, resp))
	}
}

var resetLinkPattern = regexp.MustCompile(`(\S+)/auth/reset\?token=([A-Za-z0-9_-]+)`)

// resetLink returns the base and the token of the link in a reset mail's
// text part, and requires the HTML part to carry the same link.
func resetLink(t *testing.T, m mailed) (base, token string) {
	t.Helper()
	got := resetLinkPattern.FindStringSubmatch(m.Text)
	if got == nil {
		t.Fatalf("no reset link in the mail's text:\n%s", m.Text)
	}
	if !strings.Contains(m.HTML, `href="`+got[0]+`"`) {
		t.Fatalf("the HTML part does not link to %s:\n%s", got[0], m.HTML)
	}
	return got[1], got[2]
}

// resetToken asks for a reset of email and returns the mailed token.
func (e *mailEnv) resetToken(t *testing.T, email string) string {
	t.Helper()
	e.forgot(t, email)
	_, token := resetLink(t, e.nextMail(t))
	return token
}

// postReset is a JSON POST /auth/reset.
func (e *mailEnv) postReset(token, password string, cookies ...*http.Cookie) *http.Response {
	return e.PostJSON("/auth/reset", map[string]string{"token": token, "password": password}, cookies...)
}
