package main

import (
	"github.com/spf13/pflag"

	"github.com/gatehouse-auth/gatehouse/authflows/provider"
	"github.com/gatehouse-auth/gatehouse/proxy/policy"
)

// policyFlags declares the access policy's flags (CONTRACT "Access policy:
// who may get in").
func policyFlags(fs *pflag.FlagSet, c *Config) {
	p := &c.Policy
	fs.StringSliceVar(&p.EmailDomains, "allow-email-domain", nil, "let in addresses of this domain: corp.com matches @corp.com exactly, .corp.com also any subdomain (repeatable; turns the access policy on)")
	fs.StringVar(&p.EmailsFile, "allow-emails-file", "", "file of addresses to let in, one a line, # comments; re-read within 5 s of a change, a broken file keeps the last good list (turns the access policy on)")
	fs.StringSliceVar(&p.AllowGroups, "allow-group", nil, "let in OIDC sign-ins whose groups claim holds this group (repeatable; turns the access policy on)")
	fs.BoolVar(&c.OpenSignup, "open-signup", false, "without an access policy, let any verified email create an account at its first OAuth sign-in (public apps); by default sign-up is closed")
}

// checkPolicy checks and normalizes the access rules. A bad value is a flag
// error; a broken emails file names the file and line and stops the start.
// --github-org, --github-team and --google-hosted-domain are the providers'
// own flags (they decide what a sign-in asks for and reports as groups);
// the policy takes their values from the provider configurations.
func checkPolicy(c *Config) error {
	p := &c.Policy
	var github, google, oidc *provider.Config
	for i := range c.Providers {
		switch c.Providers[i].Name {
		case "github":
			github = &c.Providers[i]
		case "google":
			google = &c.Providers[i]
		case "oidc":
			oidc = &c.Providers[i]
		}
	}
	p.GitHubOrgs, p.GitHubTeams, p.GoogleHostedDomains = github.Orgs, github.Teams, google.HostedDomains
	lists := []struct {
		flag   string
		values []string
		parse  func(string) (string, error)
	}{
		{"allow-email-domain", p.EmailDomains, policy.ParseEmailDomain},
		{"github-org", p.GitHubOrgs, policy.ParseGitHubOrg},
		{"github-team", p.GitHubTeams, policy.ParseGitHubTeam},
		{"google-hosted-domain", p.GoogleHostedDomains, policy.ParseHostedDomain},
		{"allow-group", p.AllowGroups, policy.ParseGroup},
	}
	for _, l := range lists {
		for i, v := range l.values {
			parsed, err := l.parse(v)
			if err != nil {
				return flagError(l.flag, "%v", err)
			}
			l.values[i] = parsed
		}
	}
	if (len(p.GitHubOrgs) > 0 || len(p.GitHubTeams) > 0) && github.ClientID == "" {
		flag := "github-org"
		if len(p.GitHubOrgs) == 0 {
			flag = "github-team"
		}
		return flagError(flag, "needs GitHub sign-in (--github-client-id)")
	}
	if len(p.GoogleHostedDomains) > 0 && google.ClientID == "" {
		return flagError("google-hosted-domain", "needs Google sign-in (--google-client-id)")
	}
	if len(p.AllowGroups) > 0 && oidc.Issuer == "" {
		return flagError("allow-group", "needs OpenID Connect sign-in (--oidc-issuer-url)")
	}
	if p.EmailsFile != "" {
		if _, err := policy.LoadEmailsFile(p.EmailsFile); err != nil {
			return flagError("allow-emails-file", "%v", err)
		}
	}
	return nil
}
