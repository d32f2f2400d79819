// Package policy decides who may get in: the access rules of the contract
// (email domains, an emails file, GitHub orgs and teams, Google hosted
// domains, OIDC groups) applied to a user's email and the groups their
// sign-in earned. It is pure and cheap: the per-request check reads only
// memory (the emails file is loaded and re-read on change by Refresh) and
// the session record the gate already has (AP2).
//
// Dependencies: policy → storage (the email and domain syntax, beside
// NormalizeEmail). proxy (the request gate) and authflows (every sign-in)
// call it.
package policy

import (
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

// Group prefixes in X-Forwarded-Groups and Session.Groups.
const (
	GitHubPrefix = "github:"
	GooglePrefix = "google:"
	OIDCPrefix   = "oidc:"
)

// Policy is a checked rule set. The zero of *Policy (nil) is "no policy":
// everyone not disabled passes. It is safe for concurrent use.
type Policy struct {
	on            bool
	exactDomains  map[string]struct{} // "corp.com"
	suffixDomains []string            // "corp.com" of ".corp.com": itself and subdomains
	// allowed are the groups that let a sign-in pass: github:ORG,
	// github:ORG/TEAM, google:HD, oidc:GROUP.
	allowed map[string]struct{}

	emailsFile string
	// read reads the emails file (readCapped; a test seam to write the file
	// while it is being read).
	read   func(path string) ([]byte, error)
	emails atomic.Pointer[emailSet]
	log    *slog.Logger

	mu      sync.Mutex // serializes Refresh; guards the fields below
	seen    fileState  // the file as last read
	tried   [32]byte   // SHA-256 of the contents last parsed, good or bad
	failing bool       // the file could not be read at the last look
}

// New checks rules and builds the Policy, loading the emails file: a bad
// value or an unreadable or broken file is an error (at start the process
// stops). logger receives the reload lines; nil discards them.
func New(rules Rules, logger *slog.Logger) (*Policy, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &Policy{
		on:           rules.On(),
		exactDomains: map[string]struct{}{},
		allowed:      map[string]struct{}{},
		emailsFile:   rules.EmailsFile,
		read:         readCapped,
		log:          logger,
	}
	for _, d := range rules.EmailDomains {
		d, err := ParseEmailDomain(d)
		if err != nil {
			return nil, fmt.Errorf("email domain %w", err)
		}
		if name, ok := strings.CutPrefix(d, "."); ok {
			p.suffixDomains = append(p.suffixDomains, name)
		} else {
			p.exactDomains[d] = struct{}{}
		}
	}
	groups := []struct {
		prefix string
		values []string
		parse  func(string) (string, error)
	}{
		{GitHubPrefix, rules.GitHubOrgs, ParseGitHubOrg},
		{GitHubPrefix, rules.GitHubTeams, ParseGitHubTeam},
		{GooglePrefix, rules.GoogleHostedDomains, ParseHostedDomain},
		{OIDCPrefix, rules.AllowGroups, ParseGroup},
	}
	for _, g := range groups {
		for _, v := range g.values {
			v, err := g.parse(v)
			if err != nil {
				return nil, err
			}
			p.allowed[g.prefix+v] = struct{}{}
		}
	}
	if p.emailsFile != "" {
		fi, err := os.Stat(p.emailsFile)
		if err != nil {
			return nil, err
		}
		data, err := readCapped(p.emailsFile)
		if err != nil {
			return nil, err
		}
		set, err := parseEmails(p.emailsFile, data)
		if err != nil {
			return nil, err
		}
		p.emails.Store(&set)
		p.seen, p.tried = fileState{info: fi}, sha256.Sum256(data) // a change after the Stat is read again by Refresh
	}
	return p, nil
}

// On reports whether the policy is on (any rule set).
func (p *Policy) On() bool { return p != nil && p.on }

// Passes is the decision: a disabled user never passes; with the policy
// off everyone else does; with it on, the email (normalized; "" when not
// verified) must match a domain or the emails file, or groups (the
// comma-separated groups the sign-in earned, as in Session.Groups) must hold
// an allowed one. It reads only memory and does not allocate.
func (p *Policy) Passes(email string, disabled bool, groups string) bool {
	if disabled {
		return false
	}
	if !p.On() {
		return true
	}
	return p.emailPasses(email) || p.groupsPass(groups)
}

func (p *Policy) emailPasses(email string) bool {
	at := strings.LastIndexByte(email, '@')
	if at <= 0 || at == len(email)-1 {
		return false
	}
	domain := email[at+1:]
	if _, ok := p.exactDomains[domain]; ok {
		return true
	}
	for _, suffix := range p.suffixDomains {
		if domain == suffix || len(domain) > len(suffix) && domain[len(domain)-len(suffix)-1] == '.' && domain[len(domain)-len(suffix):] == suffix {
			return true
		}
	}
	if set := p.emails.Load(); set != nil {
		if _, ok := (*set)[email]; ok {
			return true
		}
	}
	return false
}

func (p *Policy) groupsPass(groups string) bool {
	for groups != "" {
		var g string
		g, groups, _ = strings.Cut(groups, ",")
		if _, ok := p.allowed[g]; ok {
			return true
		}
	}
	return false
}

// Earned turns the groups a provider reported for a sign-in (github:ORG,
// github:ORG/TEAM, google:HD, oidc:GROUP) into the Session.Groups and
// X-Forwarded-Groups value: github and google groups only when a rule names
// them (lower-cased), every oidc group as the claim spells it; names that
// could not travel in the comma-separated list are dropped. Duplicates go.
func (p *Policy) Earned(reported []string) string {
	var kept []string
	for _, g := range reported {
		switch {
		case strings.HasPrefix(g, OIDCPrefix):
			if !validGroup(strings.TrimPrefix(g, OIDCPrefix)) {
				continue
			}
		case strings.HasPrefix(g, GitHubPrefix), strings.HasPrefix(g, GooglePrefix):
			g = strings.ToLower(g)
			if p == nil {
				continue
			}
			if _, ok := p.allowed[g]; !ok {
				continue
			}
		default:
			continue
		}
		if !contains(kept, g) {
			kept = append(kept, g)
		}
	}
	return strings.Join(kept, ",")
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
