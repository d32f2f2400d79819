package main

import (
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// envPrefix starts every variable that sets a flag.
const envPrefix = "GATEHOUSE_"

// environ is the process environment as the flags see it: a variable that
// is set, even to the empty string, counts (GATEHOUSE_ADMIN_LISTEN= turns
// the admin listener off, like --admin-listen= does).
type environ map[string]string

// osEnviron is the environment of this process.
func osEnviron() environ {
	env := environ{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// lookup is os.LookupEnv on env.
func (env environ) lookup(name string) (string, bool) {
	v, ok := env[name]
	return v, ok
}

// envName is the environment variable that can set a flag.
func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyEnv sets every flag not given on the command line from its
// GATEHOUSE_* variable, when that variable is set. Repeatable flags take a
// comma-separated list. A secret and its -file form (--smtp-password and
// --smtp-password-file) are one setting: either on the command line wins
// over both variables. A GATEHOUSE_* variable that names no flag, of fs or
// of the server, is a usage error naming it, like an unknown flag.
func applyEnv(fs *pflag.FlagSet, env environ) error {
	if err := checkEnvNames(fs, env); err != nil {
		return err
	}
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { onCommandLine[f.Name] = true })
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || onCommandLine[f.Name] || f.Name == "help" {
			return
		}
		sibling, ok := strings.CutSuffix(f.Name, "-file")
		if !ok {
			sibling = f.Name + "-file"
		}
		if fs.Lookup(sibling) != nil && onCommandLine[sibling] {
			return
		}
		if v, ok := env.lookup(envName(f.Name)); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = flagError(f.Name, "from %s: %v", envName(f.Name), e)
			}
		}
	})
	return err
}

// checkEnvNames refuses a GATEHOUSE_* variable that sets no flag of fs nor
// of the server (so a subcommand run with the server's environment file
// still starts), suggesting the closest name.
func checkEnvNames(fs *pflag.FlagSet, env environ) error {
	known := map[string]bool{}
	var names []string
	server, _ := serveFlags(io.Discard)
	for _, set := range []*pflag.FlagSet{fs, server} {
		set.VisitAll(func(f *pflag.Flag) {
			if n := strings.TrimPrefix(envName(f.Name), envPrefix); !known[n] {
				known[n] = true
				names = append(names, n)
			}
		})
	}
	var unknown []string
	for k := range env {
		if rest, ok := strings.CutPrefix(k, envPrefix); ok && !known[rest] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	hint := ""
	if s := suggest(strings.TrimPrefix(unknown[0], envPrefix), names); s != "" {
		hint = " (did you mean " + envPrefix + s + "?)"
	}
	return usageErrorf("unknown environment variable %s%s: it sets no flag; see gatehouse --help", unknown[0], hint)
}
