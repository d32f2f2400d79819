package provider

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Kind is a kind of sign-in provider Gatehouse supports: its name
// (the path segment of /auth/login/{Name} and the key of linked
// identities), its flags, and how it is set up. One file per kind
// (google.go, github.go, oidc.go) defines its value;
// nothing else asks a provider's name.
type Kind struct {
	Name  string
	Title string // default button label
	// who names the provider in --help when Title does not ("" : Title).
	who string
	// flags declares the kind's own flags beyond the common ones.
	flags func(fs *pflag.FlagSet, c *Config)
	// enabled reports whether the flags turn the provider on.
	enabled func(c *Config) bool
	// check, when set, checks the kind's own flags once it is enabled.
	check func(c *Config) error
	// endpoints names the kind's endpoint flags and their values, checked
	// as URLs (http:// only on loopback).
	endpoints func(c *Config) [][2]string
	// setup builds the configured provider; it may call the provider
	// (OIDC discovery).
	setup func(ctx context.Context, c Config, client *http.Client, now func() time.Time) (providerSetup, error)
}

// providerKinds are the supported kinds, in the order pages show them.
var providerKinds = []Kind{googleKind, githubKind, oidcKind}

// Kinds lists the supported kinds of sign-in provider in page order.
func Kinds() []Kind { return slices.Clone(providerKinds) }

func KindOf(name string) (Kind, bool) {
	for _, k := range providerKinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// DeclareFlags declares the kind's flags on fs, stored into c: the common
// --NAME-client-id, --NAME-client-secret (and -file), --NAME-redirect-url,
// then the kind's own. The caller reads --NAME-client-secret-file.
func (k Kind) DeclareFlags(fs *pflag.FlagSet, c *Config) {
	c.Name = k.Name
	n, t := k.Name, cmp.Or(k.who, k.Title)
	idUsage := t + " OAuth client id; enables " + t + " sign-in and linking"
	if k.who != "" {
		idUsage = "client id registered at the " + t
	}
	fs.StringVar(&c.ClientID, n+"-client-id", "", idUsage)
	fs.StringVar(&c.ClientSecret, n+"-client-secret", "", t+" OAuth client secret (or --"+n+"-client-secret-file)")
	fs.String(n+"-client-secret-file", "", "file holding the "+t+" OAuth client secret")
	fs.StringVar(&c.RedirectURL, n+"-redirect-url", "", "callback registered with "+t+"; must equal {base-url}/auth/callback/"+n)
	k.flags(fs, c)
}

// Enabled reports whether the flags configured this provider.
func (k Kind) Enabled(c *Config) bool { return k.enabled(c) }

// CheckFlags enforces seed rule 6 on a provider's flags: once enabled it
// has a client id, a secret, and a redirect URL that is exactly
// {base-url}/auth/callback/{name} (filled in when empty); its endpoints are
// http(s) URLs, http:// only on a loopback host. The error is one line
// naming the flag.
func (k Kind) CheckFlags(c *Config, base *url.URL) error {
	n := k.Name
	if !k.enabled(c) {
		switch {
		case c.ClientID == "" && c.ClientSecret != "":
			return flagError(n+"-client-id", "is required when --%s-client-secret is set", n)
		case c.ClientID != "": // a kind enabled by another flag (oidc: the issuer)
			return flagError(k.endpoints(c)[0][0], "is required when --%s-client-id is set", n)
		}
		return nil
	}
	if c.ClientID == "" {
		return flagError(n+"-client-id", "is required to enable %s", k.Title)
	}
	if c.ClientSecret == "" {
		return flagError(n+"-client-secret", "is required when --%s-client-id is set", n)
	}
	want := base.String() + "/auth/callback/" + n
	if c.RedirectURL == "" {
		c.RedirectURL = want
	}
	if c.RedirectURL != want {
		return flagError(n+"-redirect-url", "%q must equal the callback address %q ({base-url}/auth/callback/%s)", c.RedirectURL, want, n)
	}
	for _, e := range k.endpoints(c) {
		if err := CheckEndpointURL(e[1]); err != nil {
			return flagError(e[0], "%v", err)
		}
	}
	if k.check != nil {
		return k.check(c)
	}
	return nil
}

func flagError(flag, format string, args ...any) error {
	return fmt.Errorf("invalid --%s: %s", flag, fmt.Sprintf(format, args...))
}

// CheckEndpointURL accepts the URL of a provider endpoint: absolute https,
// or http on a loopback host (a provider on the same machine, tests). An
// http:// endpoint elsewhere would carry codes, tokens and keys in clear
// text (ID1).
func CheckEndpointURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a URL", raw)
	case u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return fmt.Errorf("%q is not an absolute http(s) URL", u.Redacted())
	case u.User != nil || u.Fragment != "":
		return fmt.Errorf("%q must not carry user info or a fragment", u.Redacted())
	case u.Scheme == "http" && !IsLoopbackHost(u.Hostname()):
		return fmt.Errorf("%q: http:// is refused except on a loopback host; use https://", u.Redacted())
	}
	return nil
}

// IsLoopbackHost reports whether host, a name or an address, stays on this
// machine: localhost or a loopback address.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
