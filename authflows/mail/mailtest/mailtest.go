// Package mailtest runs a real SMTP server (emersion/go-smtp) inside a test
// and hands over the messages it accepted, the way net/http/httptest does for
// HTTP. It also parses the messages that Gatehouse sends.
//
// Dependencies: standard library and go-smtp/go-sasl only. The tests of
// authflows/mail, authflows and cmd/gatehouse use it.
package mailtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Options shape a Server.
type Options struct {
	// Addr to listen on; default 127.0.0.1:0.
	Addr string
	// Username and Password, when set, make AUTH PLAIN mandatory before MAIL.
	Username, Password string
	// StartTLS offers STARTTLS; ImplicitTLS speaks TLS from the first byte.
	// Either way the certificate is self-signed; trust it with ClientTLS.
	StartTLS, ImplicitTLS bool
	// RejectRcpt answers 550 to RCPT for these addresses.
	RejectRcpt []string
}

// Message is one accepted message.
type Message struct {
	From     string   // envelope sender
	To       []string // envelope recipients
	Data     []byte   // the message as received
	AuthUser string   // the AUTH user name, "" without AUTH
	TLS      bool     // the session was encrypted
}

// Server is a running SMTP server. Close it, or let the test's cleanup do it.
type Server struct {
	Addr string // host:port it listens on

	opts     Options
	srv      *smtp.Server
	messages chan Message
	certPool *x509.CertPool
	once     sync.Once
}

// NewServer starts a server and closes it when the test ends.
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := Start(opts)
	if err != nil {
		t.Fatalf("mailtest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Start starts a server outside of a test's lifetime (benchmarks, helpers).
func Start(opts Options) (*Server, error) {
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	s := &Server{opts: opts, messages: make(chan Message, 100)}
	srv := smtp.NewServer(backend{s})
	srv.Domain = "mailtest.local"
	srv.AllowInsecureAuth = !opts.StartTLS && !opts.ImplicitTLS
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	srv.MaxMessageBytes = 1 << 20
	srv.ErrorLog = log.New(io.Discard, "", 0)
	var l net.Listener
	var err error
	if opts.StartTLS || opts.ImplicitTLS {
		cert, pool, cerr := selfSigned()
		if cerr != nil {
			return nil, cerr
		}
		s.certPool = pool
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	if opts.ImplicitTLS {
		l, err = tls.Listen("tcp", addr, srv.TLSConfig)
		if opts.StartTLS {
			return nil, errors.New("mailtest: StartTLS and ImplicitTLS exclude each other")
		}
	} else {
		l, err = net.Listen("tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	s.Addr = l.Addr().String()
	s.srv = srv
	go func() { _ = srv.Serve(l) }()
	return s, nil
}

// Close stops the server; messages already accepted stay readable.
func (s *Server) Close() { s.once.Do(func() { _ = s.srv.Close() }) }

// ClientTLS returns a client TLS config that trusts the server's certificate.
func (s *Server) ClientTLS() *tls.Config {
	return &tls.Config{RootCAs: s.certPool, ServerName: "127.0.0.1"}
}

// Next waits up to timeout for the next accepted message; the test fails
// without one.
func (s *Server) Next(t testing.TB, timeout time.Duration) Message {
	t.Helper()
	select {
	case m := <-s.messages:
		return m
	case <-time.After(timeout):
		t.Fatalf("mailtest: no message within %s", timeout)
		return Message{}
	}
}

// None fails the test if a message arrives within wait.
func (s *Server) None(t testing.TB, wait time.Duration) {
	t.Helper()
	select {
	case m := <-s.messages:
		t.Fatalf("mailtest: unexpected message to %v", m.To)
	case <-time.After(wait):
	}
}

// Messages is the channel of accepted messages, for tests that select on it.
func (s *Server) Messages() <-chan Message { return s.messages }

type backend struct{ s *Server }

func (b backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	_, isTLS := c.TLSConnectionState()
	return &session{s: b.s, tls: isTLS || b.s.opts.ImplicitTLS, conn: c}, nil
}

type session struct {
	s    *Server
	conn *smtp.Conn
	tls  bool
	user string
	msg  Message
}

func (ss *session) AuthMechanisms() []string {
	if ss.s.opts.Username == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if username != ss.s.opts.Username || password != ss.s.opts.Password {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "bad credentials"}
		}
		ss.user = username
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.s.opts.Username != "" && ss.user == "" {
		return smtp.ErrAuthRequired
	}
	ss.msg = Message{From: from, AuthUser: ss.user}
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	for _, r := range ss.s.opts.RejectRcpt {
		if r == to {
			return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
		}
	}
	ss.msg.To = append(ss.msg.To, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	_, isTLS := ss.conn.TLSConnectionState()
	ss.msg.Data = data
	ss.msg.TLS = ss.tls || isTLS
	ss.s.messages <- ss.msg
	return nil
}

func (ss *session) Reset()        { ss.msg = Message{AuthUser: ss.user} }
func (ss *session) Logout() error { return nil }

// selfSigned makes a certificate for 127.0.0.1 and localhost.
func selfSigned() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "mailtest"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool, nil
}
