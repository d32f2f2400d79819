package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gatehouse-auth/gatehouse/authflows/provider"
	"github.com/gatehouse-auth/gatehouse/proxy/policy"
	"github.com/gatehouse-auth/gatehouse/proxy/route"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// Config is everything the command line, the environment and the
// configuration file decide.
type Config struct {
	// ConfigFile is --config, the YAML file of settings and route rules;
	// empty for none.
	ConfigFile string
	// Routes are the configuration file's route rules, checked, in order
	// (the --public-path rules come before them in the route.Table).
	Routes []route.Rule

	Listen          string
	Upstream        *url.URL
	UpstreamTimeout time.Duration
	BaseURL         *url.URL
	DB              string
	Mode            web.Mode
	PublicPaths     []string
	AdminListen     string
	ShutdownTimeout time.Duration

	// AdminSocket is the Unix socket of the admin API; empty disables it.
	AdminSocket string
	InviteTTL   time.Duration
	// AuditLog is the audit trail's file, "-" for stderr, empty for none.
	AuditLog  string
	AccessLog bool

	CookieName        string
	CookieSecure      bool
	SessionTTL        time.Duration
	SessionIdleTTL    time.Duration
	ResetTokenTTL     time.Duration
	PasswordMinLength int

	SMTP          SMTPConfig
	MailDir       string
	MailTemplates string
	AppName       string // --app-name, defaulted to the base URL's host
	TemplatesDir  string // --templates-dir
	// PasswordSignIn is --password-sign-in: false makes the sign-in page
	// SSO-only (authflows.Config.ProvidersOnly).
	PasswordSignIn bool

	// Providers holds one entry per kind of provider.Kinds, in
	// that order, filled by the kind's own flags; a kind is on when its
	// flags enable it.
	Providers []provider.Config

	// Policy are the access rules (--allow-*, --github-org, …), checked
	// and normalized; the policy is on when any is set.
	Policy     policy.Rules
	OpenSignup bool

	TLS TLSConfig

	TrustedProxies web.TrustedProxies

	// Signed identity for the upstream.
	IdentityAssertion bool
	AssertionAudience string // default --base-url
	AssertionTTL      time.Duration

	// Forward-auth for a proxy already in front of the app.
	ForwardAuthTrusted   web.TrustedProxies // empty: the check endpoints are off
	CookieDomain         string
	AllowedRedirectHosts []string

	// Bearer is machine access by identity providers' JWTs (flags_bearer.go).
	Bearer BearerConfig
	// SecondFactor is the second factor and passkeys (flags_secondfactor.go).
	SecondFactor SecondFactorConfig

	// Freshness is how provider sign-ins stay in step with the provider
	// (flags_freshness.go).
	Freshness FreshnessConfig

	LogFormat string
	LogLevel  string

	// Argon2Memory and Argon2Time are the argon2id cost (KiB, passes). Not
	// flags: production always uses the OWASP parameters; tests lower them.
	Argon2Memory uint32
	Argon2Time   uint32
	// LogOutput is where the log, the access log and "--audit-log -" go;
	// os.Stderr when nil. Not a flag.
	LogOutput io.Writer

	// source is how parseServe made this Config: what a reload needs to
	// make it again, and where each setting came from. nil for a Config
	// made otherwise.
	source *configSource
}

// SMTPConfig is the mail relay; an empty Addr means mail goes to files.
type SMTPConfig struct {
	Addr, Username, Password, TLS, From string
}

// TLSConfig is how Gatehouse terminates TLS, if at all.
type TLSConfig struct {
	Domains    []string // automatic HTTPS (ACME) for exactly these names
	Email      string
	CA         string // ACME directory URL
	CARoot     string // PEM file of an extra root to trust for the ACME server
	Storage    string
	HTTPListen string
	// HTTPListenImplied: --http-listen was not given and is :80 because
	// of --tls-domain.
	HTTPListenImplied bool
	CertFile          string
	KeyFile           string
}

// Enabled reports whether Gatehouse terminates TLS itself.
func (t TLSConfig) Enabled() bool { return len(t.Domains) > 0 || t.CertFile != "" }

// The defaults of production argon2id (OWASP: m=19 MiB, t=2, p=1).
const (
	defaultArgon2Memory = 19456
	defaultArgon2Time   = 2
)

// flagError is a bad flag value: one line naming the flag, a usage error
// (exit 2).
func flagError(flag string, format string, args ...any) error {
	problem := fmt.Sprintf(format, args...)
	return usageError{err: fmt.Errorf("invalid --%s: %s", flag, problem), flag: flag, problem: problem}
}

// secretFromFile fills *dst from the file named by the --NAME-file flag, when set.
func secretFromFile(fs *pflag.FlagSet, name string, dst *string) error {
	path, _ := fs.GetString(name + "-file")
	if path == "" {
		return nil
	}
	if *dst != "" {
		return flagError(name+"-file", "give the secret either as --%s or as --%s-file, not both", name, name)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return flagError(name+"-file", "%v", err)
	}
	*dst = strings.TrimRight(string(b), "\r\n")
	return nil
}

// parseURL checks an absolute http(s) URL. No error prints a password the
// value may hold, parsed or not.
func parseURL(flag, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if _, _, hostPort := net.SplitHostPort(raw); err != nil && hostPort == nil && !strings.Contains(raw, "/") {
		// "127.0.0.1:3000", "[::1]:3000": the scheme is what is missing.
		return nil, flagError(flag, "%q has no scheme: write http://%s (or https://)", redactUserinfo(raw), redactUserinfo(raw))
	}
	if err != nil {
		return nil, flagError(flag, "%q is not a URL", redactUserinfo(raw))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, flagError(flag, "%q needs an http:// or https:// scheme", redactUserinfo(raw))
	}
	if u.Host == "" {
		return nil, flagError(flag, "%q has no host", redactUserinfo(raw))
	}
	// A bare "?" or "#" sets no RawQuery or Fragment, yet joined to a
	// path it would still end the URL's path ("https://app?/auth/…").
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil || strings.ContainsAny(raw, "?#") {
		// Redacted: the error is printed, a password in the user info must not be.
		return nil, flagError(flag, "%q must not carry a query, fragment or user info", u.Redacted())
	}
	return u, nil
}

// redactUserinfo hides what may be a user and password in a URL value an
// error repeats, parsed or not: whatever stands between the scheme and the
// last "@" of the value. A password may hold "/", "?" or "#" unescaped,
// so the authority's end cannot be trusted; hiding too much in an error
// costs nothing.
func redactUserinfo(raw string) string {
	at := strings.LastIndex(raw, "@")
	if at < 0 {
		return raw
	}
	scheme, _, ok := strings.Cut(raw[:at], "://")
	if !ok {
		return "xxxxx" + raw[at:]
	}
	return scheme + "://xxxxx" + raw[at:]
}

func checkDuration(flag string, d time.Duration, allowZero bool) error {
	if d < 0 || d == 0 && !allowZero {
		return flagError(flag, "%v must be positive", d)
	}
	return nil
}

// minIdleTTL is the shortest --session-idle-ttl: last-seen is written every
// quarter of it (session.TouchIntervalFor), and more often would turn every
// request into a write.
const minIdleTTL = 10 * time.Second

func checkIdleTTL(idle time.Duration) error {
	if idle > 0 && idle < minIdleTTL {
		return flagError("session-idle-ttl", "%v is too short: want 0 (no idle limit) or at least %v", idle, minIdleTTL)
	}
	return nil
}

func checkListen(flag, addr string) error {
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return flagError(flag, "%q is not host:port", addr)
	}
	if n, err := strconv.ParseUint(port, 10, 64); err == nil {
		if n > 65535 {
			return flagError(flag, "%q: port %s is out of range (0 to 65535)", addr, port)
		}
	} else if _, err := net.LookupPort("tcp", port); err != nil {
		return flagError(flag, "%q: %q is no port number or service name", addr, port)
	}
	return nil
}

// defaultTLSStorage is the certificate folder beside the bbolt file.
func defaultTLSStorage(db string) string {
	if isPostgresURL(db) {
		return "gatehouse-certs"
	}
	return filepath.Join(filepath.Dir(db), "gatehouse-certs")
}

var errHelp = errors.New("help requested")

// provider returns the configuration of the provider kind name (tests).
func (c *Config) provider(name string) *provider.Config {
	for i := range c.Providers {
		if c.Providers[i].Name == name {
			return &c.Providers[i]
		}
	}
	return nil
}
