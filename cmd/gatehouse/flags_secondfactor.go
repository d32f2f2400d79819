package main

import (
	"log/slog"
	"net/netip"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gatehouse-auth/gatehouse/authflows"
	"github.com/gatehouse-auth/gatehouse/authflows/secondfactor"
)

// SecondFactorConfig is the second factor and passkeys: the flags
// --second-factor and --webauthn-rp-id.
type SecondFactorConfig struct {
	Policy authflows.SecondFactorPolicy
	// RPID is the WebAuthn relying-party id; empty: the host of
	// --base-url, and passkeys off when that host is an IP address.
	RPID string
}

// secondFactorFlags declares the flags of the second factor.
func secondFactorFlags(fs *pflag.FlagSet, c *Config) {
	p := &c.SecondFactor
	fs.StringVar((*string)(&p.Policy), "second-factor", string(authflows.SecondFactorOptional), "optional (users may enrol a second factor), required (a password sign-in without one must enrol before reaching the app) or required-all (provider sign-ins too)")
	fs.StringVar(&p.RPID, "webauthn-rp-id", "", "WebAuthn relying-party id of passkeys: the --base-url host or a domain it belongs to (default the --base-url host; passkeys are off for an IP address)")
}

// checkSecondFactorFlags checks --second-factor and --webauthn-rp-id: the
// relying-party id must be the --base-url host or a domain that host is
// in, since browsers refuse any other.
func checkSecondFactorFlags(c *Config) error {
	p := &c.SecondFactor
	switch p.Policy {
	case authflows.SecondFactorOptional, authflows.SecondFactorRequired, authflows.SecondFactorRequiredAll:
	default:
		return flagError("second-factor", "%q: want optional, required or required-all", p.Policy)
	}
	p.RPID = strings.ToLower(strings.TrimSuffix(p.RPID, "."))
	if p.RPID == "" {
		return nil
	}
	if _, err := netip.ParseAddr(p.RPID); err == nil || !validHostName(p.RPID) {
		return flagError("webauthn-rp-id", "%q is not a domain name", p.RPID)
	}
	if _, err := secondfactor.NewPasskeys(nil, secondfactor.PasskeyConfig{BaseURL: c.BaseURL.String(), RPID: p.RPID}); err != nil {
		return flagError("webauthn-rp-id", "%v", strings.TrimPrefix(err.Error(), "secondfactor: passkeys: "))
	}
	return nil
}

// warnPasskeysOff logs, at a start, that passkeys are off because the
// --base-url host is an IP address and no --webauthn-rp-id names a domain.
func warnPasskeysOff(log *slog.Logger, cfg Config) {
	if cfg.SecondFactor.RPID == "" && !authflows.PasskeysPossible(cfg.BaseURL, "") {
		log.Warn("passkeys are off: the --base-url host is an IP address, which cannot be a WebAuthn relying party; use a host name in --base-url (and --webauthn-rp-id) to offer passkeys",
			"base_url", cfg.BaseURL.String())
	}
}
