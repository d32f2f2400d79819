//go:build integration

package deploy

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// flagTable is the operator manual's chapter that holds the table of every
// flag.
const flagTable = "../docs/configuration.md"

// manualFlagRows returns the rows of the operator manual's flag table
// (docs/configuration.md, "Every flag") as first cell → the other cells, in
// order, one entry per row.
func manualFlagRows(t *testing.T) [][2]string {
	t.Helper()
	data, err := os.ReadFile(flagTable)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][2]string
	in := false
	for line := range strings.SplitSeq(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "| flag | default | meaning |"):
			in = true
		case in && !strings.HasPrefix(line, "|"):
			in = false
		case in && !strings.HasPrefix(line, "|---"):
			cells := strings.SplitN(strings.Trim(line, "|"), "|", 2)
			if len(cells) == 2 {
				rows = append(rows, [2]string{cells[0], cells[1]})
			}
		}
	}
	if len(rows) < 30 {
		t.Fatalf("%s's flag table: only %d rows found", flagTable, len(rows))
	}
	return rows
}

// The operator manual's flag table is what an operator reads instead of
// --help: it names every flag of `gatehouse --help` exactly once (a flag listed twice
// with two different meanings leaves the reader guessing which is true),
// names no flag the binary lacks, and a default given as one plain value
// (not one computed from other flags) is the default --help prints.
func TestManualFlagTableMatchesHelp(t *testing.T) {
	flags := gatehouseFlags(t)
	name := regexp.MustCompile("`--([a-z0-9-]+)(\\[-file\\])?`")
	listed := map[string]int{}
	for _, row := range manualFlagRows(t) {
		var names []string
		for _, m := range name.FindAllStringSubmatch(row[0], -1) {
			names = append(names, m[1])
			if m[2] != "" {
				names = append(names, m[1]+"-file")
			}
		}
		for _, n := range names {
			listed[n]++
			if !hasFlag(flags, n) {
				t.Errorf("%s's flag table lists --%s, which gatehouse --help does not have", flagTable, n)
			}
		}
		// "| `--x` | `value` | …": one flag, one plain default.
		def := regexp.MustCompile("^ `([^`]*)` \\|").FindStringSubmatch(row[1])
		if len(names) != 1 || def == nil || strings.ContainsAny(def[1], "<{") {
			continue // several flags, or a default computed from others
		}
		want, got := def[1], flags[names[0]].def
		if dw, err1 := time.ParseDuration(want); err1 == nil {
			if dg, err2 := time.ParseDuration(got); err2 == nil && dw == dg {
				continue
			}
		}
		if want != got {
			t.Errorf("%s gives --%s the default %q, gatehouse --help %q", flagTable, names[0], want, got)
		}
	}
	for n, count := range listed {
		if count > 1 {
			t.Errorf("%s's flag table lists --%s in %d rows", flagTable, n, count)
		}
	}
	var missing []string
	for n := range flags {
		if listed[n] == 0 && n != "help" && n != "version" {
			missing = append(missing, n)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("%s's flag table lacks %q", flagTable, missing)
	}
}
