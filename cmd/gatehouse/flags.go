package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gatehouse-auth/gatehouse/authflows"
	"github.com/gatehouse-auth/gatehouse/authflows/mail"
	"github.com/gatehouse-auth/gatehouse/authflows/provider"
	"github.com/gatehouse-auth/gatehouse/proxy/route"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// rawFlags are the flag values before validation.
type rawFlags struct {
	upstream, baseURL, mode string
	trusted                 []string
	forwardAuthTrusted      []string
	cfg                     Config
}

// serveFlags declares every flag of the server on a new FlagSet.
func serveFlags(out io.Writer) (*pflag.FlagSet, *rawFlags) {
	fs := pflag.NewFlagSet("gatehouse", pflag.ContinueOnError)
	fs.SetOutput(out)
	fs.SortFlags = false
	r := &rawFlags{}
	c := &r.cfg
	configFlag(fs, &c.ConfigFile, "YAML file setting any flag below by its name without --, and the route rules (routes:); the command line and GATEHOUSE_* win over it. Routes, public-path and the access policy's allow-* keys are re-read on SIGHUP and within 5 s of a change")
	fs.StringVar(&c.Listen, "listen", ":8080", "address the proxy listens on")
	fs.StringVar(&r.upstream, "upstream", "", "URL of the protected app, e.g. http://127.0.0.1:3000 (required)")
	fs.DurationVar(&c.UpstreamTimeout, "upstream-timeout", 60*time.Second, "how long to wait for the upstream's response headers before answering 504")
	fs.StringVar(&r.baseURL, "base-url", "", "public URL users see, the only source of absolute URLs (default http://localhost:<port of --listen>, or https://<first --tls-domain>)")
	dbFlag(fs, &c.DB)
	fs.StringVar(&r.mode, "mode", "redirect", "what an unauthenticated request to a protected path gets: redirect (GET/HEAD to the sign-in page, other methods 401) or 401")
	fs.StringSliceVar(&c.PublicPaths, "public-path", nil, "path served without a session, matched at a segment boundary (repeatable)")
	fs.StringVar(&c.AdminListen, "admin-listen", "127.0.0.1:9090", "address of /healthz, /readyz and /metrics; empty disables")
	adminFlags(fs, &c.AdminSocket, &c.AuditLog)
	fs.DurationVar(&c.InviteTTL, "invite-ttl", 72*time.Hour, "lifetime of an invitation link (gatehouse users add --invite)")
	fs.BoolVar(&c.AccessLog, "access-log", true, "write one log line per proxied request; --access-log=false turns it off")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 25*time.Second, "how long SIGTERM waits for in-flight requests before closing")
	fs.StringVar(&c.CookieName, "cookie-name", "gatehouse_session", "name of the session cookie (default __Host-gatehouse_session when --base-url is https and cookies are Secure)")
	fs.BoolVar(&c.CookieSecure, "cookie-secure", false, "set the Secure attribute on cookies (default true when --base-url is https)")
	fs.DurationVar(&c.SessionTTL, "session-ttl", 168*time.Hour, "absolute session lifetime")
	fs.DurationVar(&c.SessionIdleTTL, "session-idle-ttl", 24*time.Hour, "idle timeout of a session; 0 disables")
	fs.DurationVar(&c.ResetTokenTTL, "reset-token-ttl", 30*time.Minute, "lifetime of a password reset token")
	passwordFlag(fs, &c.PasswordMinLength)
	fs.StringVar(&c.SMTP.Addr, "smtp-addr", "", "host:port of the mail relay; when empty, mail is written to --mail-dir")
	fs.StringVar(&c.SMTP.Username, "smtp-username", "", "SMTP AUTH user name")
	fs.StringVar(&c.SMTP.Password, "smtp-password", "", "SMTP AUTH password (or --smtp-password-file)")
	fs.String("smtp-password-file", "", "file holding the SMTP AUTH password")
	fs.StringVar(&c.SMTP.TLS, "smtp-tls", "starttls", "SMTP transport security: starttls, tls or none")
	fs.StringVar(&c.SMTP.From, "smtp-from", "", "From address (default gatehouse@<base-url host>; required with --smtp-addr when that host is an IP address)")
	fs.StringVar(&c.MailDir, "mail-dir", "mail", "without --smtp-addr, each message is written here as an RFC 5322 .eml file")
	fs.StringVar(&c.MailTemplates, "mail-templates", "", "directory of mail templates overriding the embedded ones")
	kinds := provider.Kinds()
	c.Providers = make([]provider.Config, len(kinds))
	for i, k := range kinds {
		k.DeclareFlags(fs, &c.Providers[i])
	}
	policyFlags(fs, c)
	pageFlags(fs, c)
	bearerFlags(fs, c)
	secondFactorFlags(fs, c)
	freshnessFlags(fs, c)
	fs.StringSliceVar(&c.TLS.Domains, "tls-domain", nil, "domain to obtain a certificate for by ACME; turns on automatic HTTPS (repeatable)")
	fs.StringVar(&c.TLS.Email, "tls-email", "", "ACME account email")
	fs.StringVar(&c.TLS.CA, "acme-ca", "https://acme-v02.api.letsencrypt.org/directory", "ACME directory URL")
	fs.StringVar(&c.TLS.CARoot, "acme-ca-root", "", "PEM file of an extra root CA to trust for the ACME server")
	fs.StringVar(&c.TLS.Storage, "tls-storage", "", "directory for certificates and ACME account (default: gatehouse-certs beside --db)")
	fs.StringVar(&c.TLS.HTTPListen, "http-listen", "", "plain-HTTP listener answering ACME HTTP-01 challenges and redirecting the rest to HTTPS (default :80 with --tls-domain)")
	fs.StringVar(&c.TLS.CertFile, "tls-cert", "", "static certificate PEM file instead of ACME (reloaded when it changes)")
	fs.StringVar(&c.TLS.KeyFile, "tls-key", "", "private key PEM file of --tls-cert")
	fs.StringSliceVar(&r.trusted, "trusted-proxies", nil, "CIDRs whose X-Forwarded-For is believed for the client IP (repeatable)")
	fs.BoolVar(&c.IdentityAssertion, "identity-assertion", true, "add a signed JWT (ES256) with the user's identity as X-Gatehouse-Jwt-Assertion to every forwarded request with a session; keys at /auth/.well-known/jwks.json")
	fs.StringVar(&c.AssertionAudience, "assertion-audience", "", "aud claim of the identity assertion (default --base-url)")
	fs.DurationVar(&c.AssertionTTL, "assertion-ttl", 5*time.Minute, "lifetime of an identity assertion (10s to 24h)")
	fs.StringSliceVar(&r.forwardAuthTrusted, "forward-auth-trusted", nil, "CIDR of a proxy (nginx, Traefik, Caddy) allowed to call /auth/check/*; others get 403, and the endpoints are off without it (repeatable)")
	fs.StringVar(&c.CookieDomain, "cookie-domain", "", "Domain attribute of the session cookie, for apps on sibling hosts (must contain the --base-url host)")
	fs.StringSliceVar(&c.AllowedRedirectHosts, "allowed-redirect-host", nil, "host under --cookie-domain that an absolute rd may name after sign-in (repeatable)")
	logFlags(fs, &c.LogFormat, &c.LogLevel)
	return fs, r
}

func dbFlag(fs *pflag.FlagSet, db *string) {
	fs.StringVar(db, "db", "gatehouse.db", "database: a bbolt file path, or a postgres:// (postgresql://) URL shared by several replicas")
	fs.String("db-file", "", "file holding --db, so that a postgres:// URL's password stays out of the process list")
}

// dbFromFile fills *db from --db-file, when given: not both.
func dbFromFile(fs *pflag.FlagSet, db *string) error {
	path, _ := fs.GetString("db-file")
	if path == "" {
		return nil
	}
	if fs.Changed("db") {
		return flagError("db-file", "give the database either as --db or as --db-file, not both")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return flagError("db-file", "%v", err)
	}
	*db = strings.TrimSpace(string(b))
	return nil
}

func passwordFlag(fs *pflag.FlagSet, n *int) {
	fs.IntVar(n, "password-min-length", 12, "minimum password length in characters (Unicode code points after NFKC)")
}

func logFlags(fs *pflag.FlagSet, format, level *string) {
	fs.StringVar(format, "log-format", "text", "log format: text or json")
	fs.StringVar(level, "log-level", "info", "log level: debug, info, warn or error")
}

// usage prints the help text of the server command.
func usage(out io.Writer, fs *pflag.FlagSet) {
	fmt.Fprintf(out, `gatehouse: an authenticating reverse proxy in front of one web app.

Usage:
  gatehouse --upstream URL [flags]
  gatehouse users add|list|show|disable|enable|delete|set-password|revoke-sessions ...
  gatehouse sessions list E
  gatehouse keys rotate
  gatehouse mail show [--mail-dir D] [FILE]
  gatehouse config check [--config FILE] [flags]
  gatehouse version (or gatehouse --version)

gatehouse users --help, gatehouse sessions --help and gatehouse keys --help
list their commands; they talk to the running server through --admin-socket,
or open --db when no server runs. Every command has --help.

Every flag can also be set from the environment as GATEHOUSE_<FLAG> in upper
snake case (--smtp-addr => GATEHOUSE_SMTP_ADDR); the command line wins, and
repeatable flags take a comma-separated list there. A variable that is set
counts even when empty (GATEHOUSE_ADMIN_LISTEN= disables the admin listener);
a GATEHOUSE_* variable that names no flag is refused.

--config FILE (or GATEHOUSE_CONFIG) reads a YAML file where every flag may
be set under its name without -- (lists for repeatable flags), plus the
route rules (routes:); the command line and the environment win over it.
Secrets go there only as their -file forms. gatehouse config check
validates it all and prints the settings in force.

Exit codes: 0 done, 1 failed at run time, 2 usage error (unknown command,
flag or variable; missing or bad value).

Flags:
%s`, fs.FlagUsages())
}

// parseServe turns the command line, the environment and the
// configuration file into a checked Config. Every error is one line naming
// the flag, or the file, the line and the key.
func parseServe(args []string, getenv environ, out io.Writer) (Config, error) {
	return serveParse{command: "gatehouse", help: usage, read: readConfigFile}.parse(args, getenv, out)
}

// serveParse is how the server's flags are read: by the server, by
// `gatehouse config check`, and again by a reload.
type serveParse struct {
	command string                          // the words before args, for the help hints
	help    func(io.Writer, *pflag.FlagSet) // prints --help
	read    configReader                    // reads the configuration file
}

// parse is parseServe as p says.
func (p serveParse) parse(args []string, getenv environ, out io.Writer) (Config, error) {
	command, read := p.command, p.read
	fs, r := serveFlags(out)
	fs.Usage = func() { p.help(out, fs) }
	if err := parseFlags(fs, args, command); err != nil {
		if err == pflag.ErrHelp {
			return Config{}, errHelp
		}
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, unknownCommand(command, fs.Arg(0), commands)
	}
	src, err := applySources(fs, args, getenv, read)
	if err != nil {
		return Config{}, err
	}
	c, err := checkServe(fs, r)
	if err != nil {
		return Config{}, src.locate(err)
	}
	if src.file != nil {
		c.Routes = src.file.routes
	}
	if _, err := route.NewTable(c.PublicPaths, c.Routes); err != nil {
		return Config{}, src.locate(flagError("public-path", "%v", err))
	}
	src.settings = collectSettings(fs, src.from, &c)
	c.source = src
	return c, nil
}

// checkServe checks the flag values of fs and r, now set from every
// source, into a Config.
func checkServe(fs *pflag.FlagSet, r *rawFlags) (Config, error) {
	c := r.cfg
	secrets := []struct {
		flag string
		dst  *string
	}{{"smtp-password", &c.SMTP.Password}}
	for i := range c.Providers {
		p := &c.Providers[i]
		secrets = append(secrets, struct {
			flag string
			dst  *string
		}{p.Name + "-client-secret", &p.ClientSecret})
	}
	for _, s := range secrets {
		if err := secretFromFile(fs, s.flag, s.dst); err != nil {
			return Config{}, err
		}
	}
	if err := dbFromFile(fs, &c.DB); err != nil {
		return Config{}, err
	}
	var err error
	if r.upstream == "" {
		return Config{}, flagError("upstream", "is required (the URL of the app to protect)")
	}
	if c.Upstream, err = parseURL("upstream", r.upstream); err != nil {
		return Config{}, err
	}
	if err := checkTLS(fs, &c); err != nil {
		return Config{}, err
	}
	if err := checkBaseURL(fs, r.baseURL, &c); err != nil {
		return Config{}, err
	}
	for _, f := range []struct{ flag, path string }{{"tls-cert", c.TLS.CertFile}, {"tls-key", c.TLS.KeyFile}, {"acme-ca-root", c.TLS.CARoot}} {
		if err := checkReadable(f.flag, f.path); err != nil {
			return Config{}, err
		}
	}
	switch web.Mode(r.mode) {
	case web.ModeRedirect, web.Mode401:
		c.Mode = web.Mode(r.mode)
	default:
		return Config{}, flagError("mode", "%q: want redirect or 401", r.mode)
	}
	for _, p := range c.PublicPaths {
		if _, err := route.ParsePublicPath(p); err != nil {
			return Config{}, flagError("public-path", "%v", err)
		}
	}
	for _, l := range [][2]string{{"listen", c.Listen}, {"admin-listen", c.AdminListen}, {"http-listen", c.TLS.HTTPListen}} {
		if err := checkListen(l[0], l[1]); err != nil {
			return Config{}, err
		}
	}
	if c.Listen == "" {
		return Config{}, flagError("listen", "is required")
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
		zero bool
	}{{"upstream-timeout", c.UpstreamTimeout, false}, {"shutdown-timeout", c.ShutdownTimeout, false}, {"session-ttl", c.SessionTTL, false}, {"session-idle-ttl", c.SessionIdleTTL, true}, {"reset-token-ttl", c.ResetTokenTTL, false}, {"invite-ttl", c.InviteTTL, false}} {
		if err := checkDuration(d.flag, d.v, d.zero); err != nil {
			return Config{}, err
		}
	}
	if err := checkIdleTTL(c.SessionIdleTTL); err != nil {
		return Config{}, err
	}
	if c.PasswordMinLength < 8 || c.PasswordMinLength > 1024 {
		return Config{}, flagError("password-min-length", "%d: want 8 to 1024", c.PasswordMinLength)
	}
	if err := checkCookieName(fs, &c); err != nil {
		return Config{}, err
	}
	if err := checkDB(c.DB); err != nil {
		return Config{}, err
	}
	if err := checkAdminFlags(fs, c.DB, &c.AdminSocket, c.AuditLog); err != nil {
		return Config{}, err
	}
	if err := checkMail(&c); err != nil {
		return Config{}, err
	}
	for i, k := range provider.Kinds() {
		if err := k.CheckFlags(&c.Providers[i], c.BaseURL); err != nil {
			return Config{}, err
		}
	}
	if err := checkPolicy(&c); err != nil {
		return Config{}, err
	}
	if err := checkPages(&c); err != nil {
		return Config{}, err
	}
	if c.TrustedProxies, err = web.ParseTrustedProxies(r.trusted); err != nil {
		return Config{}, flagError("trusted-proxies", "%v", err)
	}
	if err := checkLog(c.LogFormat, c.LogLevel); err != nil {
		return Config{}, err
	}
	if err := checkIdentityFlags(r, &c); err != nil {
		return Config{}, err
	}
	if err := checkFreshnessFlags(&c); err != nil {
		return Config{}, err
	}
	if err := checkBearerFlags(&c); err != nil {
		return Config{}, err
	}
	if err := checkSecondFactorFlags(&c); err != nil {
		return Config{}, err
	}
	c.Argon2Memory, c.Argon2Time = defaultArgon2Memory, defaultArgon2Time
	return c, nil
}

func checkTLS(fs *pflag.FlagSet, c *Config) error {
	t := &c.TLS
	if (t.CertFile == "") != (t.KeyFile == "") {
		return flagError("tls-cert", "--tls-cert and --tls-key go together")
	}
	if len(t.Domains) > 0 && t.CertFile != "" {
		return flagError("tls-domain", "use either --tls-domain (ACME) or --tls-cert (static), not both")
	}
	for _, d := range t.Domains {
		if d == "" || strings.ContainsAny(d, "/:*@ ") || net.ParseIP(d) != nil {
			return flagError("tls-domain", "%q is not a domain name", d)
		}
	}
	if len(t.Domains) > 0 {
		if _, err := parseURL("acme-ca", t.CA); err != nil {
			return err
		}
		if !fs.Changed("http-listen") && t.HTTPListen == "" {
			t.HTTPListen, t.HTTPListenImplied = ":80", true
		}
		if t.Storage == "" {
			t.Storage = defaultTLSStorage(c.DB)
		}
	}
	if t.HTTPListen != "" && !t.Enabled() {
		return flagError("http-listen", "needs --tls-domain or --tls-cert")
	}
	return nil
}

func checkBaseURL(fs *pflag.FlagSet, raw string, c *Config) error {
	if raw == "" {
		var err error
		if raw, err = defaultBaseURL(c); err != nil {
			return err
		}
	}
	u, err := parseURL("base-url", raw)
	if err != nil {
		return err
	}
	u.Path = strings.TrimRight(u.Path, "/")
	if c.TLS.Enabled() && u.Scheme != "https" {
		return flagError("base-url", "%q is http:// while Gatehouse terminates TLS; use https://", raw)
	}
	c.BaseURL = u
	if !fs.Changed("cookie-secure") { // set by a flag or by GATEHOUSE_COOKIE_SECURE
		c.CookieSecure = u.Scheme == "https"
	}
	if c.TLS.Enabled() && !c.CookieSecure {
		// The cookie would lose Secure (and its __Host- name) and travel in
		// clear to the plain-HTTP listener, or any http:// page of the host.
		return flagError("cookie-secure", "false while Gatehouse terminates TLS: the session cookie would be sent over plain HTTP")
	}
	return nil
}

// checkReadable fails when a file named by a flag cannot be read, so that a
// typo is reported as the flag's error before anything is opened.
func checkReadable(flag, path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return flagError(flag, "%v", err)
	}
	return f.Close()
}

func checkMail(c *Config) error {
	if c.MailTemplates != "" {
		if st, err := os.Stat(c.MailTemplates); err != nil || !st.IsDir() {
			return flagError("mail-templates", "%q is not a readable directory", c.MailTemplates)
		}
		// Parsed as the start will, so that `gatehouse config check` and
		// a reload name a broken template before anything is opened.
		if err := authflows.CheckTemplates(c.MailTemplates); err != nil {
			return flagError("mail-templates", "%v", err)
		}
	}
	switch c.SMTP.TLS {
	case "starttls", "tls", "none":
	default:
		return flagError("smtp-tls", "%q: want starttls, tls or none", c.SMTP.TLS)
	}
	if c.SMTP.Addr != "" {
		if _, _, err := net.SplitHostPort(c.SMTP.Addr); err != nil {
			return flagError("smtp-addr", "%q is not host:port", c.SMTP.Addr)
		}
		if host, _, _ := net.SplitHostPort(c.SMTP.Addr); c.SMTP.Username != "" && c.SMTP.TLS == "none" && !mail.IsLoopback(host) {
			return flagError("smtp-tls", "none would send the SMTP password in clear text to %s; use starttls or tls", host)
		}
	} else if c.MailDir == "" {
		return flagError("mail-dir", "is required when --smtp-addr is empty")
	}
	if c.SMTP.From == "" {
		host := c.BaseURL.Hostname()
		if net.ParseIP(host) != nil {
			if c.SMTP.Addr != "" {
				return flagError("smtp-from", "is required with --smtp-addr when the --base-url host %s is an IP address", host)
			}
			host = "localhost"
		}
		c.SMTP.From = "gatehouse@" + host
	}
	if !strings.Contains(c.SMTP.From, "@") || strings.ContainsAny(c.SMTP.From, "\r\n") {
		return flagError("smtp-from", "%q is not an email address", c.SMTP.From)
	}
	return nil
}

func checkLog(format, level string) error {
	if format != "text" && format != "json" {
		return flagError("log-format", "%q: want text or json", format)
	}
	switch level {
	case "debug", "info", "warn", "error":
		return nil
	}
	return flagError("log-level", "%q: want debug, info, warn or error", level)
}
