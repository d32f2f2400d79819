package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/gatehouse-auth/gatehouse/proxy/route"
)

// runConfig is `gatehouse config check [--config F] [flags]`: every check
// of a start (the file, the flags, the environment, the routes, the
// templates) without opening a port or the store, then the settings in
// force. Exit 0 when the start would accept them, 2 when it would not.
func runConfig(args []string, stdout, stderr io.Writer, getenv environ) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, configUsageHead)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] != "check" {
		fmt.Fprintf(stderr, "gatehouse config: %v\n", unknownCommand("gatehouse config", args[0], []string{"check"}))
		return exitUsage
	}
	p := serveParse{command: "gatehouse config check", help: configCheckUsage, read: readConfigFile}
	cfg, err := p.parse(args[1:], getenv, stdout)
	if errors.Is(err, errHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "gatehouse config check: %v\n", err)
		return exitUsage
	}
	startWarnings(newLogger(stderr, "text", "warn"), cfg)
	writeSettings(stdout, cfg)
	return exitOK
}

const configUsageHead = `Usage: gatehouse config check [--config FILE] [flags]

Checks what a start would check (the configuration file, the flags, the
GATEHOUSE_* environment, the route rules, the templates) without opening
a port or the database, and prints the settings in force, each with where
it comes from; secrets show as (set). Exit 0 when valid, 2 when not.
`

func configCheckUsage(out io.Writer, fs *pflag.FlagSet) {
	fmt.Fprintf(out, "%s\nFlags (those of the server):\n%s", configUsageHead, fs.FlagUsages())
}

// writeSettings prints cfg's settings as YAML lines, each with its source
// in a comment, then the route table in the order it is tried.
func writeSettings(out io.Writer, cfg Config) {
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "# The configuration is valid. Settings in force, each with where it comes from")
	fmt.Fprintln(w, "# (command line, GATEHOUSE_* variable, FILE:LINE or default); secrets show as (set).")
	for _, s := range cfg.source.settings {
		shown := s.shown
		if shown == "" {
			shown = `""`
		}
		fmt.Fprintf(w, "%s: %s\t# %s\n", s.name, shown, s.source)
	}
	table, _ := route.NewTable(cfg.PublicPaths, cfg.Routes) // checked by parse
	fmt.Fprintln(w, "routes:\t# tried in order, the first match decides")
	for _, r := range table.Rules() {
		fmt.Fprintf(w, "  - %s\t# %s\n", r, r.Source)
	}
	fmt.Fprintf(w, "  # no match: %s\t# default\n", strings.TrimPrefix(route.Default().String(), "path: , "))
	w.Flush()
}
