package provider

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/spf13/pflag"
	"golang.org/x/oauth2"
)

// oidcKind is any OpenID Provider configured by discovery from its issuer
// URL (Keycloak, Okta, Entra ID, Dex, Authentik, Zitadel, …).
var oidcKind = Kind{
	Name:  "oidc",
	Title: "Single sign-on",
	who:   "OpenID Provider",
	flags: func(fs *pflag.FlagSet, c *Config) {
		c.Scopes = []string{"openid", "email", "profile"}
		fs.StringVar(&c.Issuer, "oidc-issuer-url", "", "issuer URL of an OpenID Provider; enables provider oidc, configured by discovery ({issuer}/.well-known/openid-configuration)")
		fs.StringVar(&c.Title, "oidc-title", "Single sign-on", "label of the oidc sign-in button")
		fs.Var((*scopeList)(&c.Scopes), "oidc-scopes", "scopes asked of the OpenID Provider (space or comma separated; must include openid)")
		fs.StringVar(&c.GroupsClaim, "oidc-groups-claim", "groups", "ID token claim whose entries become groups oidc:GROUP")
	},
	enabled: func(c *Config) bool { return c.Issuer != "" },
	check: func(c *Config) error {
		if !slices.Contains(c.Scopes, "openid") {
			return flagError("oidc-scopes", "%q must include openid", strings.Join(c.Scopes, " "))
		}
		return nil
	},
	endpoints: func(c *Config) [][2]string {
		return [][2]string{{"oidc-issuer-url", c.Issuer}}
	},
	setup: setupOIDC,
}

// scopeList is a pflag value: scopes separated by spaces or commas.
type scopeList []string

func (s *scopeList) String() string { return strings.Join(*s, " ") }
func (s *scopeList) Type() string   { return "string" }
func (s *scopeList) Set(v string) error {
	*s = strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' })
	return nil
}

// discoveryWait is how long the start retries discovery: in Kubernetes
// the IdP may start after Gatehouse.
const discoveryWait = 30 * time.Second

func setupOIDC(ctx context.Context, c Config, client *http.Client, now func() time.Time) (providerSetup, error) {
	if err := CheckEndpointURL(c.Issuer); err != nil {
		return providerSetup{}, flagError("oidc-issuer-url", "%v", err)
	}
	scopes := c.Scopes
	if len(scopes) == 0 {
		scopes = []string{"openid", "email", "profile"}
	}
	if !slices.Contains(scopes, "openid") {
		return providerSetup{}, flagError("oidc-scopes", "must include openid")
	}
	ctx = oidc.ClientContext(ctx, client)
	p, err := discover(ctx, c.Issuer, cmp.Or(max(c.DiscoveryWait, 0), discoveryWait))
	if err != nil {
		return providerSetup{}, err
	}
	var doc struct {
		JWKSURL    string   `json:"jwks_uri"`
		Algs       []string `json:"id_token_signing_alg_values_supported"`
		EndSession string   `json:"end_session_endpoint"`
	}
	if err := p.Claims(&doc); err != nil || doc.JWKSURL == "" {
		return providerSetup{}, flagError("oidc-issuer-url", "%q: the discovery document names no jwks_uri", c.Issuer)
	}
	endpoint := p.Endpoint()
	for _, e := range []string{endpoint.AuthURL, endpoint.TokenURL, doc.JWKSURL} {
		if err := CheckEndpointURL(e); err != nil {
			return providerSetup{}, flagError("oidc-issuer-url", "discovered endpoint %v", err)
		}
	}
	if doc.EndSession != "" && CheckEndpointURL(doc.EndSession) != nil {
		doc.EndSession = "" // not followed: as if the provider had none
	}
	id := &oidcIdentifier{
		issuer:      c.Issuer,
		endSession:  doc.EndSession,
		clientID:    c.ClientID,
		groupsClaim: cmp.Or(c.GroupsClaim, "groups"),
		verify:      newIDTokenVerifier(c.Issuer, newAgingKeySet(ctx, doc.JWKSURL, now), c.ClientID, signingAlgs(doc.Algs), now),
	}
	return providerSetup{
		title:    cmp.Or(c.Title, "Single sign-on"),
		endpoint: oauth2.Endpoint{AuthURL: endpoint.AuthURL, TokenURL: endpoint.TokenURL},
		scopes:   scopes,
		nonce:    true,
		identity: id,
	}, nil
}

// discover fetches the issuer's discovery document, retrying with a short
// backoff for wait. A document that names another issuer is final. The
// error is one line naming --oidc-issuer-url.
func discover(ctx context.Context, issuer string, wait time.Duration) (*oidc.Provider, error) {
	deadline := time.Now().Add(wait)
	backoff := 250 * time.Millisecond
	for {
		p, err := oidc.NewProvider(ctx, issuer)
		if err == nil {
			return p, nil
		}
		var mismatch *oidc.IssuerMismatchError
		if errors.As(err, &mismatch) {
			return nil, flagError("oidc-issuer-url", "%q: the discovery document names another issuer, %q", issuer, oneLine(mismatch.Discovered))
		}
		if time.Now().Add(backoff).After(deadline) {
			return nil, flagError("oidc-issuer-url", "%q: discovery failed for %s: %s", issuer, wait, oneLine(err.Error()))
		}
		select {
		case <-ctx.Done():
			return nil, flagError("oidc-issuer-url", "%q: discovery stopped: %v", issuer, ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 4*time.Second)
	}
}

// oneLine keeps an error message on one short line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return clip(s, 200)
}

// oidcIdentifier identifies an account of a generic OpenID Provider by its
// verified ID token alone.
type oidcIdentifier struct {
	issuer      string
	endSession  string // end_session_endpoint of the discovery document, "" for none
	clientID    string
	groupsClaim string
	verify      *idTokenVerifier
}

// identify verifies the ID token (ID1) and keys the identity by iss and
// sub (an issuer URL has no fragment, so "#" separates them without
// ambiguity). The email counts only when email_verified is true; a false
// or missing claim leaves the identity without one. Each entry of the
// groups claim becomes "oidc:GROUP".
func (o *oidcIdentifier) identify(ctx context.Context, tok *oauth2.Token, check idCheck) (Identity, error) {
	raw, _ := tok.Extra("id_token").(string)
	idt, c, err := o.verify.verify(ctx, raw, check)
	if err != nil {
		return Identity{}, err
	}
	id := Identity{Subject: idt.Issuer + "#" + idt.Subject, SID: c.SessionID}
	verifiedEmail(&id, c.Email, bool(c.EmailVerified))
	var all map[string]json.RawMessage
	if err := idt.Claims(&all); err != nil {
		return Identity{}, IDTokenError{"claims are not a JSON object"}
	}
	groups, err := claimStrings(all[o.groupsClaim])
	if err != nil {
		return Identity{}, IDTokenError{fmt.Sprintf("claim %q: %v", o.groupsClaim, err)}
	}
	for _, g := range groups {
		if g != "" && !strings.ContainsFunc(g, func(r rune) bool { return r == ',' || r < 0x20 || r == 0x7f }) {
			id.Groups = append(id.Groups, "oidc:"+g)
		}
	}
	id.Groups = sortedUnique(id.Groups)
	if len(id.Groups) == 0 {
		id.Groups = nil
	}
	return id, nil
}

// claimStrings reads a claim that is a list of strings or one string;
// absent or null is no entries.
func claimStrings(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err == nil {
		return many, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err != nil {
		return nil, errors.New("neither a string nor a list of strings")
	}
	return []string{one}, nil
}

// signingAlgs are the ID token algorithms a discovery document names that
// go-oidc verifies (as its own provider keeps them); none: RS256, the
// specification's default.
func signingAlgs(named []string) []string {
	var algs []string
	for _, a := range named {
		switch a {
		case oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512, oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA:
			algs = append(algs, a)
		}
	}
	return algs
}
