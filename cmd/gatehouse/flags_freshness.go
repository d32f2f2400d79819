package main

import (
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/gatehouse-auth/gatehouse/authflows/seal"
)

// FreshnessConfig is how provider sign-ins stay in step with the provider:
// how often they are checked again (--session-refresh) and the key that
// seals their tokens at rest (--token-key-file).
type FreshnessConfig struct {
	// SessionRefresh is --session-refresh: how often a provider session is
	// checked again with its provider; 0 never.
	SessionRefresh time.Duration
	// OIDCLogout is --oidc-logout: sign-out of an oidc session continues
	// at the OpenID Provider.
	OIDCLogout   bool
	TokenKeyFile string
	// TokenKey is the key read from TokenKeyFile; nil without one (then no
	// provider token is stored).
	TokenKey *seal.Key
}

// freshnessFlags declares the flags of session freshness.
func freshnessFlags(fs *pflag.FlagSet, c *Config) {
	fs.DurationVar(&c.Freshness.SessionRefresh, "session-refresh", time.Hour, "how often a provider sign-in's account and groups are checked again with the provider, off the request path (at least 1s; 0 disables)")
	fs.BoolVar(&c.Freshness.OIDCLogout, "oidc-logout", false, "POST /auth/logout of an oidc session continues to the OpenID Provider's end_session_endpoint (id_token_hint, post_logout_redirect_uri {base-url}/auth/login)")
	fs.StringVar(&c.Freshness.TokenKeyFile, "token-key-file", "", "file of a 32-byte key (raw, or base64) encrypting stored provider refresh and access tokens (AES-GCM); without it none are stored and provider sign-ins are not checked again")
}

// checkFreshnessFlags checks the refresh interval and reads the token key.
func checkFreshnessFlags(c *Config) error {
	f := &c.Freshness
	if f.SessionRefresh < 0 || (f.SessionRefresh > 0 && f.SessionRefresh < time.Second) {
		return flagError("session-refresh", "%s: want 0 (off) or at least 1s", f.SessionRefresh)
	}
	if f.TokenKeyFile == "" {
		return nil
	}
	k, err := seal.ReadKeyFile(f.TokenKeyFile)
	if err != nil {
		return flagError("token-key-file", "%v", err)
	}
	f.TokenKey = k
	return nil
}

// freshnessWarnings logs, once at start, that provider sign-ins keep no
// tokens without --token-key-file, and so are never checked again with
// the provider.
func freshnessWarnings(log *slog.Logger, cfg Config) {
	if cfg.Freshness.TokenKey != nil || len(providerConfigs(cfg)) == 0 {
		return
	}
	log.Warn("no --token-key-file: provider tokens are not stored, so provider sign-ins (google, oidc, github) are not checked again with the provider before they expire; give a file of 32 random bytes (head -c 32 /dev/urandom | base64)")
}
