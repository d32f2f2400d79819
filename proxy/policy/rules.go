package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// Rules are the access rules as configured (the flags of the contract's
// "Access policy"). Check them with the Parse functions before New.
type Rules struct {
	// EmailDomains: "corp.com" matches addresses @corp.com exactly;
	// ".corp.com" matches @corp.com and any subdomain of it.
	EmailDomains []string
	// EmailsFile names a file of allowed addresses, one a line, # comments.
	EmailsFile string
	// GitHubOrgs and GitHubTeams ("org/team-slug"): a GitHub sign-in
	// passes when the account is a member.
	GitHubOrgs  []string
	GitHubTeams []string
	// GoogleHostedDomains: a Google sign-in passes when the ID token's hd
	// claim equals one of them.
	GoogleHostedDomains []string
	// AllowGroups: an OIDC sign-in passes when its groups claim holds one.
	AllowGroups []string
}

// On reports whether any rule is set: then only who passes gets in.
func (r Rules) On() bool {
	return len(r.EmailDomains) > 0 || r.EmailsFile != "" || len(r.GitHubOrgs) > 0 ||
		len(r.GitHubTeams) > 0 || len(r.GoogleHostedDomains) > 0 || len(r.AllowGroups) > 0
}

// ParseEmailDomain checks an --allow-email-domain value and returns it
// lower-cased: a domain name, optionally with a leading "." for "and its
// subdomains".
func ParseEmailDomain(s string) (string, error) {
	name := strings.TrimPrefix(s, ".")
	if err := checkDomain(name); err != nil {
		return "", fmt.Errorf("%q: %w", s, err)
	}
	return strings.ToLower(s), nil
}

// ParseHostedDomain checks a --google-hosted-domain value (a domain name,
// no leading dot) and returns it lower-cased.
func ParseHostedDomain(s string) (string, error) {
	if err := checkDomain(s); err != nil {
		return "", fmt.Errorf("%q: %w", s, err)
	}
	return strings.ToLower(s), nil
}

// ParseGitHubOrg checks a --github-org value (a GitHub login: letters,
// digits and single inner hyphens, at most 39 characters) and returns it
// lower-cased: GitHub logins are case-insensitive.
func ParseGitHubOrg(s string) (string, error) {
	if !validLogin(s) {
		return "", fmt.Errorf("%q is not a GitHub organization name", s)
	}
	return strings.ToLower(s), nil
}

// ParseGitHubTeam checks a --github-team value, "org/team-slug", and
// returns it lower-cased.
func ParseGitHubTeam(s string) (string, error) {
	org, slug, ok := strings.Cut(s, "/")
	if !ok || !validLogin(org) || !validSlug(slug) {
		return "", fmt.Errorf("%q: want org/team-slug", s)
	}
	return strings.ToLower(s), nil
}

// ParseGroup checks an --allow-group value: the group name as the OIDC
// provider's groups claim carries it (compared exactly), non-empty, without
// a comma (the X-Forwarded-Groups separator), surrounding spaces or control
// characters.
func ParseGroup(s string) (string, error) {
	if !validGroup(s) {
		return "", fmt.Errorf("%q is not a group name (non-empty, no comma, no surrounding space, no control character)", s)
	}
	return s, nil
}

func validGroup(s string) bool {
	if s == "" || strings.TrimSpace(s) != s {
		return false
	}
	for _, c := range s {
		if c == ',' || c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

var errDomain = errors.New("not a domain name")

// checkDomain accepts a DNS name (storage.ValidDomain).
func checkDomain(s string) error {
	if !storage.ValidDomain(s) {
		return errDomain
	}
	return nil
}

func validLogin(s string) bool {
	if s == "" || len(s) > 39 || s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

func validSlug(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '-' && s[i] != '_' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
