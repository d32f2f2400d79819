package main

import (
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gatehouse-auth/gatehouse/authflows/provider"
	"github.com/gatehouse-auth/gatehouse/proxy/bearer"
)

// BearerConfig is machine access by identity providers' JWTs: the flags
// --bearer-jwt-issuer and --bearer-jwt-audience. (API tokens need no flag:
// gatehouse tokens makes them.)
type BearerConfig struct {
	JWTIssuers  []string
	JWTAudience string
	// GroupsClaim is --oidc-groups-claim: the claim whose entries become
	// oidc:GROUP, as for an oidc sign-in.
	GroupsClaim string
}

// bearerFlags declares the flags of bearer JWTs.
func bearerFlags(fs *pflag.FlagSet, c *Config) {
	b := &c.Bearer
	fs.StringSliceVar(&b.JWTIssuers, "bearer-jwt-issuer", nil, "issuer URL of an identity provider whose JWTs are accepted as Authorization: Bearer on routes with tokens: true, verified against its discovered key set (repeatable; needs --bearer-jwt-audience)")
	fs.StringVar(&b.JWTAudience, "bearer-jwt-audience", "", "aud that a bearer JWT must carry: the API's own audience, not a sign-in client id (required with --bearer-jwt-issuer)")
}

// checkBearerFlags checks the bearer JWT flags: an issuer needs the
// audience and the audience an issuer; issuers are http(s) URLs as
// --oidc-issuer-url is (http only on loopback); the audience is never the
// client id of a sign-in provider, whose ID tokens would otherwise pass as
// bearer credentials.
func checkBearerFlags(c *Config) error {
	b := &c.Bearer
	switch {
	case len(b.JWTIssuers) > 0 && b.JWTAudience == "":
		return usageErrorf("--bearer-jwt-issuer needs --bearer-jwt-audience: the aud a JWT must carry to be accepted here")
	case len(b.JWTIssuers) == 0 && b.JWTAudience != "":
		return usageErrorf("--bearer-jwt-audience needs --bearer-jwt-issuer: the identity provider whose JWTs carry it")
	case len(b.JWTIssuers) == 0:
		return nil
	}
	if strings.TrimSpace(b.JWTAudience) != b.JWTAudience || strings.ContainsAny(b.JWTAudience, "\r\n\t") {
		return flagError("bearer-jwt-audience", "%q must not contain surrounding space or line breaks", b.JWTAudience)
	}
	for _, issuer := range b.JWTIssuers {
		if err := provider.CheckEndpointURL(issuer); err != nil {
			return flagError("bearer-jwt-issuer", "%v", err)
		}
	}
	for _, p := range c.Providers {
		if p.ClientID != "" && p.ClientID == b.JWTAudience {
			return flagError("bearer-jwt-audience", "%q is --%s-client-id: the ID tokens of that sign-in would pass as bearer tokens; give the API's own audience", b.JWTAudience, p.Name)
		}
		if p.Name == "oidc" {
			b.GroupsClaim = p.GroupsClaim
		}
	}
	if _, err := bearer.New(bearer.Config{Issuers: b.JWTIssuers, Audience: b.JWTAudience}); err != nil {
		return flagError("bearer-jwt-issuer", "%v", strings.TrimPrefix(err.Error(), "bearer: "))
	}
	b.JWTIssuers = slices.Clip(b.JWTIssuers)
	return nil
}
