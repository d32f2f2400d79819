package main

import (
	"errors"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// configSource is how parseServe made a Config from its sources: the
// command line, the GATEHOUSE_* environment and the configuration file,
// in that order of precedence, then the defaults.
type configSource struct {
	args []string
	env  environ
	file *configFile // nil without --config
	// data and info are the configuration file as read, for the reload
	// watcher to start from.
	data []byte
	info os.FileInfo
	// from says where each flag that is not at its default came from:
	// "command line", "GATEHOUSE_X" or "FILE:LINE"; fromFile holds the
	// flags the file set.
	from     map[string]string
	fromFile map[string]bool
	settings []setting
}

// applySources sets the flags of fs (already parsed from args) from the
// environment, then from the configuration file that --config (or
// GATEHOUSE_CONFIG) names, each level only where no level above set them.
func applySources(fs *pflag.FlagSet, args []string, env environ, read configReader) (*configSource, error) {
	src := &configSource{args: slices.Clone(args), env: env, from: map[string]string{}, fromFile: map[string]bool{}}
	fs.Visit(func(f *pflag.Flag) { src.from[f.Name] = "command line" })
	if err := applyEnv(fs, env); err != nil {
		return nil, err
	}
	fs.Visit(func(f *pflag.Flag) {
		if _, ok := src.from[f.Name]; !ok {
			src.from[f.Name] = envName(f.Name)
		}
	})
	path, _ := fs.GetString("config")
	if path == "" {
		return src, nil
	}
	data, info, err := read(path)
	if err != nil {
		return nil, flagError("config", "%v", err)
	}
	cf, err := parseConfigFile(path, data, fs)
	if err != nil {
		return nil, err
	}
	fromFile, err := applyConfigFile(fs, cf)
	if err != nil {
		return nil, err
	}
	for flag, at := range fromFile {
		src.from[flag], src.fromFile[flag] = at, true
	}
	src.file, src.data, src.info = cf, data, info
	return src, nil
}

// configFlag declares --config on fs.
func configFlag(fs *pflag.FlagSet, path *string, usage string) {
	fs.StringVar(path, "config", "", usage)
}

// applyConfigFileTo sets the flags of a subcommand's fs (--db,
// --admin-socket, --mail-dir, …) that no level above set from the
// configuration file named by its --config (or GATEHOUSE_CONFIG), as the
// server reads them: the file is checked as the server checks it, and its
// other keys are the server's alone.
func applyConfigFileTo(fs *pflag.FlagSet) error {
	path, _ := fs.GetString("config")
	if path == "" {
		return nil
	}
	data, _, err := readConfigFile(path)
	if err != nil {
		return flagError("config", "%v", err)
	}
	server, _ := serveFlags(io.Discard)
	cf, err := parseConfigFile(path, data, server)
	if err != nil {
		return err
	}
	var own []fileValue
	for _, v := range cf.values {
		if fs.Lookup(v.flag) != nil {
			own = append(own, v)
		}
	}
	cf.values = own
	_, err = applyConfigFile(fs, cf)
	return err
}

// locate reports a bad flag value that came from the configuration file at
// its line: "gatehouse.yaml:3: mode: "fast": want redirect or 401".
func (s *configSource) locate(err error) error {
	var u usageError
	if !errors.As(err, &u) || u.flag == "" || !s.fromFile[u.flag] {
		return err
	}
	return usageErrorf("%s: %s: %s", s.from[u.flag], u.flag, u.problem)
}

// setting is one flag's effective value and where it came from.
type setting struct {
	name string
	// value is the flag's value as set, for comparing two Configs; shown
	// is what `gatehouse config check` prints: the value in force (a
	// default derived from other flags filled in), a secret as (set).
	value, shown string
	source       string // "command line", "GATEHOUSE_X", "FILE:LINE" or "default"
}

// collectSettings lists every flag of fs in declaration order with its
// value and source, the derived defaults of c filled in.
func collectSettings(fs *pflag.FlagSet, from map[string]string, c *Config) []setting {
	derived := map[string]string{
		"base-url":           c.BaseURL.String(),
		"cookie-secure":      strconv.FormatBool(c.CookieSecure),
		"cookie-name":        c.CookieName,
		"smtp-from":          c.SMTP.From,
		"app-name":           c.AppName,
		"assertion-audience": c.AssertionAudience,
		"admin-socket":       c.AdminSocket,
		"tls-storage":        c.TLS.Storage,
		"http-listen":        c.TLS.HTTPListen,
		"db":                 redactedDB(c.DB),
	}
	var out []setting
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" {
			return
		}
		s := setting{name: f.Name, value: flagValue(f), source: from[f.Name]}
		if s.source == "" {
			s.source = "default"
		}
		s.shown = s.value
		if d, ok := derived[f.Name]; ok {
			s.shown = d
		}
		if isSecretFlag(fs, f.Name) {
			s.shown = "(not set)"
			file := fs.Lookup(f.Name + "-file")
			switch {
			case file.Value.String() != "":
				s.shown, s.source = "(set)", "read from "+file.Name
			case f.Value.String() != "":
				s.shown = "(set)"
			}
		}
		out = append(out, s)
	})
	return out
}

// flagValue is a flag's value as text; a list as [a, b].
func flagValue(f *pflag.Flag) string {
	if list, ok := f.Value.(pflag.SliceValue); ok {
		return "[" + strings.Join(list.GetSlice(), ", ") + "]"
	}
	return f.Value.String()
}

// redactedDB is --db with a password it carries hidden.
func redactedDB(db string) string {
	if !isPostgresURL(db) {
		return db
	}
	u, err := url.Parse(db)
	if err != nil {
		return "(a postgres URL that does not parse)"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
