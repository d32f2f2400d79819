// Package policy decides who may get in: the access rules of the contract
// (email domains, an emails file, GitHub orgs and teams, Google hosted
// domains, OIDC groups) applied to a user's email and the groups their
// sign-in earned. It is pure and cheap: the per-request check reads only
// memory (the emails file is loaded and re-read on change by Refresh) and
// the session record the gate already has (AP2).
//
// Update replaces the rules as a whole while running (a reload of the
// configuration file); the emails file is re-read by Refresh when it
// changes.
//
// Dependencies: policy → storage (the email and domain syntax, beside
// NormalizeEmail), proxy/filewatch. proxy (the request gate), proxy/route
// (group names), authflows (every sign-in) and cmd/gatehouse call it.
package policy

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gatehouse-auth/gatehouse/proxy/filewatch"
)

// Group prefixes in X-Forwarded-Groups and Session.Groups.
const (
	GitHubPrefix = "github:"
	GooglePrefix = "google:"
	OIDCPrefix   = "oidc:"
)

// Policy is the access rules in force. The zero of *Policy (nil) is "no
// policy": everyone not disabled passes. It is safe for concurrent use;
// Update replaces the rules as a whole, and the request path reads them
// without a lock.
type Policy struct {
	rules atomic.Pointer[ruleSet]
	log   *slog.Logger
	// read reads the emails file (readCapped; a test seam to write the file
	// while it is being read).
	read func(path string) ([]byte, error)

	mu sync.Mutex // serializes Refresh and Update; guards the fields below
	// watch follows the emails file of the rules in force (nil: none).
	watch *filewatch.Watch
	// emailsBroken: the emails file's contents last read have a bad line.
	emailsBroken bool
	// emailsBad: the emails file's last change could not be read or
	// parsed; the last good list is in force. Read by EmailsFileStatus.
	emailsBad atomic.Bool
}

// ruleSet is one checked, immutable rule set.
type ruleSet struct {
	on            bool
	exactDomains  map[string]struct{} // "corp.com"
	suffixDomains []string            // "corp.com" of ".corp.com": itself and subdomains
	// allowed are the groups that let a sign-in pass: github:ORG,
	// github:ORG/TEAM, google:HD, oidc:GROUP.
	allowed map[string]struct{}

	emailsFile string
	// emails is the emails file's list in force; successive rule sets of
	// the same file share it, so that a reload of the file reaches them.
	emails *atomic.Pointer[emailSet]
}

// New checks rules and builds the Policy, loading the emails file: a bad
// value or an unreadable or broken file is an error (at start the process
// stops). logger receives the reload lines; nil discards them.
func New(rules Rules, logger *slog.Logger) (*Policy, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &Policy{log: logger, read: readCapped}
	if err := p.Update(rules); err != nil {
		return nil, err
	}
	return p, nil
}

// Update checks rules and puts them in force for the next request and
// sign-in, as one change: a bad value, or an emails file (when it names
// another file than the rules in force) that cannot be read or has a bad
// line, is an error and changes nothing.
func (p *Policy) Update(rules Rules) error {
	rs, err := compile(rules)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if old := p.rules.Load(); old != nil && old.emailsFile == rules.EmailsFile {
		rs.emails = old.emails
		p.rules.Store(rs)
		return nil
	}
	var watch *filewatch.Watch
	if rs.emailsFile != "" {
		fi, err := os.Stat(rs.emailsFile)
		if err != nil {
			return err
		}
		data, err := p.read(rs.emailsFile)
		if err != nil {
			return err
		}
		set, err := parseEmails(rs.emailsFile, data)
		if err != nil {
			return err
		}
		rs.emails.Store(&set)
		// A change after the Stat is read again by Refresh.
		watch = filewatch.New(rs.emailsFile, func(path string) ([]byte, error) { return p.read(path) }, nil)
		watch.Prime(fi, data)
	}
	p.watch, p.emailsBroken = watch, false
	p.emailsBad.Store(false)
	p.rules.Store(rs)
	return nil
}

// compile checks rules into a ruleSet, its emails list still empty.
func compile(rules Rules) (*ruleSet, error) {
	rs := &ruleSet{
		on:           rules.On(),
		exactDomains: map[string]struct{}{},
		allowed:      map[string]struct{}{},
		emailsFile:   rules.EmailsFile,
		emails:       new(atomic.Pointer[emailSet]),
	}
	for _, d := range rules.EmailDomains {
		d, err := ParseEmailDomain(d)
		if err != nil {
			return nil, fmt.Errorf("email domain %w", err)
		}
		if name, ok := strings.CutPrefix(d, "."); ok {
			rs.suffixDomains = append(rs.suffixDomains, name)
		} else {
			rs.exactDomains[d] = struct{}{}
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
			rs.allowed[g.prefix+v] = struct{}{}
		}
	}
	return rs, nil
}

// current is the rule set in force; nil for the nil Policy.
func (p *Policy) current() *ruleSet {
	if p == nil {
		return nil
	}
	return p.rules.Load()
}

// On reports whether the policy is on (any rule set).
func (p *Policy) On() bool {
	rs := p.current()
	return rs != nil && rs.on
}

// Passes is the decision: a disabled user never passes; with the policy
// off everyone else does; with it on, the email (normalized; "" when not
// verified) must match a domain or the emails file, or groups (the
// comma-separated groups the sign-in earned, as in Session.Groups) must hold
// an allowed one. It reads only memory and does not allocate.
func (p *Policy) Passes(email string, disabled bool, groups string) bool {
	if disabled {
		return false
	}
	rs := p.current()
	if rs == nil || !rs.on {
		return true
	}
	return rs.emailPasses(email) || rs.groupsPass(groups)
}

func (rs *ruleSet) emailPasses(email string) bool {
	at := strings.LastIndexByte(email, '@')
	if at <= 0 || at == len(email)-1 {
		return false
	}
	domain := email[at+1:]
	if _, ok := rs.exactDomains[domain]; ok {
		return true
	}
	for _, suffix := range rs.suffixDomains {
		if domain == suffix || len(domain) > len(suffix) && domain[len(domain)-len(suffix)-1] == '.' && domain[len(domain)-len(suffix):] == suffix {
			return true
		}
	}
	if set := rs.emails.Load(); set != nil {
		if _, ok := (*set)[email]; ok {
			return true
		}
	}
	return false
}

func (rs *ruleSet) groupsPass(groups string) bool {
	for groups != "" {
		var g string
		g, groups, _ = strings.Cut(groups, ",")
		if _, ok := rs.allowed[g]; ok {
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
			rs := p.current()
			if rs == nil {
				continue
			}
			if _, ok := rs.allowed[g]; !ok {
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
