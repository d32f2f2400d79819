package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// Exit codes, the same in the server and in every subcommand: 0 done,
// 1 the command failed at run time (database locked, port taken, ...),
// 2 a usage error (unknown command or flag, bad or missing value, unknown
// GATEHOUSE_* variable), found before anything is opened.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// usageError marks a mistake in the command line, the environment or the
// configuration file.
type usageError struct {
	err error
	// flag and problem, for a bad flag value (flagError): the flag's name
	// and what is wrong with its value, so that a value from the
	// configuration file can be reported at its line instead.
	flag, problem string
}

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usageErrorf is a usage error with a formatted one-line message.
func usageErrorf(format string, args ...any) error {
	return usageError{err: fmt.Errorf(format, args...)}
}

// exitCode is the process exit code for err.
func exitCode(err error) int {
	var u usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &u):
		return exitUsage
	}
	return exitFailure
}

// parseFlags parses args into fs. Every parse error is a usage error; an
// unknown flag names the closest known one and where to read more:
// "unknown flag --upstrem (did you mean --upstream?); see gatehouse --help".
// command is the command line prefix of fs ("gatehouse", "gatehouse users add").
// It returns pflag.ErrHelp for -h and --help.
func parseFlags(fs *pflag.FlagSet, args []string, command string) error {
	err := fs.Parse(args)
	if err == nil || errors.Is(err, pflag.ErrHelp) {
		return err
	}
	var notExist *pflag.NotExistError
	if errors.As(err, &notExist) {
		return unknownFlag(fs, notExist, command)
	}
	return usageErrorf("%v; see %s --help", err, command)
}

func unknownFlag(fs *pflag.FlagSet, e *pflag.NotExistError, command string) error {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	given := "--" + e.GetSpecifiedName()
	guess := e.GetSpecifiedName()
	if short := e.GetSpecifiedShortnames(); short != "" {
		// "-upstream" is read as the shorthands u, p, s...: suggest from the whole word.
		given, guess = "-"+short, short
	}
	hint := ""
	if s := suggest(guess, names); s != "" {
		hint = " (did you mean --" + s + "?)"
	}
	return usageErrorf("unknown flag %s%s; see %s --help", given, hint, command)
}

// unknownCommand is the usage error of a command word nobody declared.
func unknownCommand(command, given string, known []string) error {
	hint := ""
	if s := suggest(given, known); s != "" {
		hint = " (did you mean " + s + "?)"
	}
	return usageErrorf("unknown command %q%s; see %s --help", given, hint, command)
}

// suggest returns the candidate input is a prefix of, when there is exactly
// one, or else the closest candidate with at most a third of the input's
// letters wrong (at least one allowed), or "". Case is ignored.
func suggest(input string, candidates []string) string {
	input = strings.ToLower(input)
	if input == "" {
		return ""
	}
	best, bestDist := "", len(input)/3+1
	var prefixed []string
	for _, c := range candidates {
		if c == "help" {
			continue
		}
		lc := strings.ToLower(c)
		if strings.HasPrefix(lc, input) {
			prefixed = append(prefixed, c)
		}
		if d := editDistance(input, lc); d < bestDist || d == bestDist && best == "" {
			best, bestDist = c, d
		}
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b
// (insertions, deletions, substitutions and transpositions of neighbours).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
