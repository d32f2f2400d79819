package main

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/gatehouse-auth/gatehouse/authflows"
)

// pageFlags registers the sign-in page's flags: --app-name,
// --templates-dir and --password-sign-in.
func pageFlags(fs *pflag.FlagSet, c *Config) {
	fs.StringVar(&c.AppName, "app-name", "", "name shown in page titles, headings and mail subjects (default the host of --base-url)")
	fs.StringVar(&c.TemplatesDir, "templates-dir", "", "directory whose files override page (NAME.html, style.css) and mail (NAME.subject|text|html.tmpl) templates by file name; checked at start")
	fs.BoolVar(&c.PasswordSignIn, "password-sign-in", true, "offer the email and password form on the sign-in page; false (needs a provider) leaves only the provider buttons and refuses password sign-ins (SSO only)")
}

// checkPages defaults the app name and parses every page and mail template
// with the overrides of --templates-dir, so that a broken or unknown file
// stops the start with its name.
func checkPages(c *Config) error {
	if c.AppName == "" {
		c.AppName = c.BaseURL.Host
	}
	if len(c.AppName) > 100 {
		return flagError("app-name", "longer than 100 characters")
	}
	// It stands in every mail's subject, one header line: a line break or
	// another control character would fail every mail at delivery.
	if !utf8.ValidString(c.AppName) || strings.IndexFunc(c.AppName, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) >= 0 {
		return flagError("app-name", "%q holds a control or invisible character", c.AppName)
	}
	if !c.PasswordSignIn && len(providerConfigs(*c)) == 0 {
		return flagError("password-sign-in", "false needs a sign-in provider (--google-client-id, --github-client-id or --oidc-issuer-url): without one nobody could sign in")
	}
	if c.TemplatesDir == "" {
		return nil
	}
	if err := authflows.CheckTemplates(c.TemplatesDir); err != nil {
		return flagError("templates-dir", "%v", err)
	}
	return nil
}
