package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// TLS modes of an SMTP relay (--smtp-tls).
const (
	TLSStartTLS = "starttls" // plain connection upgraded by STARTTLS; refused if the relay does not offer it
	TLSImplicit = "tls"      // TLS from the first byte (SMTPS, usually port 465)
	TLSNone     = "none"     // no encryption (a relay on localhost or inside the pod)
)

// Defaults of SMTPConfig.
const (
	DefaultDialTimeout = 10 * time.Second
	DefaultIOTimeout   = 30 * time.Second
)

// SMTPConfig is a mail relay.
type SMTPConfig struct {
	Addr     string // host:port
	Username string // AUTH PLAIN when set
	Password string
	TLS      string // TLSStartTLS (default when empty), TLSImplicit or TLSNone
	From     string // envelope sender and From header: "addr" or "Name <addr>"

	// TLSConfig, when set, is used for STARTTLS and implicit TLS (a private
	// root, say). ServerName defaults to the host of Addr.
	TLSConfig *tls.Config
	// DialTimeout bounds connecting (and the TLS handshake); default DefaultDialTimeout.
	DialTimeout time.Duration
	// IOTimeout bounds each SMTP command and the wait after the message
	// body; default DefaultIOTimeout.
	IOTimeout time.Duration
}

// SMTP sends each message over a new connection to a relay.
type SMTP struct {
	cfg       SMTPConfig
	host      string
	from      string // bare envelope address
	localName string // EHLO name: the domain of From
}

// NewSMTP checks cfg and returns the sender. AUTH sends the password in the
// clear unless the connection is encrypted, so a username with TLS "none" is
// refused unless the relay is on a loopback address (like net/smtp's PlainAuth).
func NewSMTP(cfg SMTPConfig) (*SMTP, error) {
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("mail: smtp address %q: %w", cfg.Addr, err)
	}
	from, err := mail.ParseAddress(cfg.From)
	if err != nil {
		return nil, fmt.Errorf("mail: from address %q: %w", cfg.From, err)
	}
	switch cfg.TLS {
	case "":
		cfg.TLS = TLSStartTLS
	case TLSStartTLS, TLSImplicit, TLSNone:
	default:
		return nil, fmt.Errorf("mail: smtp TLS mode %q: want starttls, tls or none", cfg.TLS)
	}
	if cfg.Username != "" && cfg.TLS == TLSNone && !IsLoopback(host) {
		return nil, fmt.Errorf("mail: refusing SMTP AUTH without TLS to %s (not a loopback address)", host)
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.IOTimeout <= 0 {
		cfg.IOTimeout = DefaultIOTimeout
	}
	local := "localhost"
	if i := strings.LastIndexByte(from.Address, '@'); i >= 0 && i+1 < len(from.Address) {
		local = from.Address[i+1:]
	}
	return &SMTP{cfg: cfg, host: host, from: from.Address, localName: local}, nil
}

// IsLoopback reports whether host is localhost or a loopback address: the
// only relays that may receive AUTH without TLS.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Send delivers m: connect, (STARTTLS), EHLO, (AUTH), MAIL, RCPT, DATA, QUIT.
// Cancelling ctx aborts the conversation. A 5xx answer to RCPT or to the
// message body wraps ErrPermanent; everything else is worth a retry.
func (s *SMTP) Send(ctx context.Context, m storage.Mail) error {
	msg, err := Message(m, s.cfg.From, time.Now())
	if err != nil {
		return err
	}
	c, err := s.dial(ctx)
	if err != nil {
		return fmt.Errorf("mail: smtp %s: %w", s.cfg.Addr, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.Close() }) // unblocks a stuck read
	defer stop()

	if err := s.converse(c, m.To, msg); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fmt.Errorf("mail: smtp %s: %w", s.cfg.Addr, err)
	}
	return nil
}

// Probe checks that the relay answers, without sending: connect,
// (STARTTLS), EHLO, (AUTH), QUIT. The Queue calls it during an outage so
// that waiting mail goes out as soon as the relay is back.
func (s *SMTP) Probe(ctx context.Context) error {
	c, err := s.dial(ctx)
	if err != nil {
		return fmt.Errorf("mail: smtp %s: %w", s.cfg.Addr, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	if err := c.Hello(s.localName); err != nil {
		return fmt.Errorf("mail: smtp %s: hello: %w", s.cfg.Addr, err)
	}
	if s.cfg.Username != "" && c.SupportsAuth(sasl.Plain) {
		if err := c.Auth(sasl.NewPlainClient("", s.cfg.Username, s.cfg.Password)); err != nil {
			return fmt.Errorf("mail: smtp %s: auth: %w", s.cfg.Addr, err)
		}
	}
	_ = c.Quit()
	return nil
}

func (s *SMTP) converse(c *smtp.Client, to string, msg []byte) error {
	if err := c.Hello(s.localName); err != nil {
		return fmt.Errorf("hello: %w", err)
	}
	if s.cfg.Username != "" {
		if !c.SupportsAuth(sasl.Plain) {
			return errors.New("relay does not offer AUTH PLAIN")
		}
		if err := c.Auth(sasl.NewPlainClient("", s.cfg.Username, s.cfg.Password)); err != nil {
			return fmt.Errorf("auth: %w", err)
		}
	}
	// A UTF-8 address (EM1 accepts "élodie@example.fr") travels only with
	// SMTPUTF8 declared (RFC 6531); a relay that does not offer it never
	// will, so that is permanent.
	var opts *smtp.MailOptions
	if !isASCII(to) || !isASCII(s.from) {
		if ok, _ := c.Extension("SMTPUTF8"); !ok {
			return fmt.Errorf("mail from: the relay does not offer SMTPUTF8, which a UTF-8 address needs: %w", ErrPermanent)
		}
		opts = &smtp.MailOptions{UTF8: true}
	}
	if err := c.Mail(s.from, opts); err != nil {
		return fmt.Errorf("mail from: %w", err)
	}
	if err := c.Rcpt(to, nil); err != nil {
		return fmt.Errorf("rcpt to: %w", permanentIf5xx(err))
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}
	if _, err := w.Write(msg); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("data: %w", permanentIf5xx(err))
	}
	_ = c.Quit() // the message is accepted; a failed QUIT changes nothing
	return nil
}

// dial connects within DialTimeout: TLS from the start in TLSImplicit mode,
// STARTTLS before anything else in TLSStartTLS mode (refused when the relay
// does not offer it, so a man in the middle cannot strip it).
func (s *SMTP) dial(ctx context.Context) (*smtp.Client, error) {
	dctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	defer cancel()
	var conn net.Conn
	var err error
	if s.cfg.TLS == TLSImplicit {
		d := tls.Dialer{Config: s.tlsConfig()}
		conn, err = d.DialContext(dctx, "tcp", s.cfg.Addr)
	} else {
		var d net.Dialer
		conn, err = d.DialContext(dctx, "tcp", s.cfg.Addr)
	}
	if err != nil {
		return nil, err
	}
	conn = cappedConn{Conn: conn, max: s.cfg.IOTimeout}
	if s.cfg.TLS != TLSStartTLS {
		return smtp.NewClient(conn), nil
	}
	c, err := smtp.NewClientStartTLS(conn, s.tlsConfig())
	if err != nil {
		_ = conn.Close()
		if strings.Contains(err.Error(), "doesn't support STARTTLS") {
			return nil, errors.New("relay does not offer STARTTLS (use --smtp-tls none to send unencrypted)")
		}
		return nil, fmt.Errorf("starttls: %w", err)
	}
	return c, nil
}

// cappedConn bounds every wait on the connection by max: go-smtp sets its own
// deadlines (five minutes for the greeting, none between commands), and a
// relay that stops answering must not hold the queue for that long.
type cappedConn struct {
	net.Conn
	max time.Duration
}

func (c cappedConn) SetDeadline(t time.Time) error { return c.Conn.SetDeadline(c.cap(t)) }
func (c cappedConn) SetReadDeadline(t time.Time) error {
	return c.Conn.SetReadDeadline(c.cap(t))
}
func (c cappedConn) SetWriteDeadline(t time.Time) error {
	return c.Conn.SetWriteDeadline(c.cap(t))
}

func (c cappedConn) cap(t time.Time) time.Time {
	if limit := time.Now().Add(c.max); t.IsZero() || t.After(limit) {
		return limit
	}
	return t
}

func (s *SMTP) tlsConfig() *tls.Config {
	cfg := &tls.Config{}
	if s.cfg.TLSConfig != nil {
		cfg = s.cfg.TLSConfig.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = s.host
	}
	if cfg.MinVersion == 0 {
		cfg.MinVersion = tls.VersionTLS12
	}
	return cfg
}

// permanentIf5xx wraps ErrPermanent around a 5xx SMTP reply.
func permanentIf5xx(err error) error {
	var se *smtp.SMTPError
	if errors.As(err, &se) && se.Code >= 500 && se.Code < 600 {
		return fmt.Errorf("%w (%w)", err, ErrPermanent)
	}
	return err
}

// isASCII reports whether s is all ASCII.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
