package main

import (
	"strings"
	"testing"
)

// Every command and subcommand answers --help with its usage on stdout and
// exit 0, and a typo'd flag with "unknown flag …; see … --help" and exit 2.
func TestHelpForEveryCommand(t *testing.T) {
	var lines [][]string
	lines = append(lines, []string{}, []string{"help"}, []string{"version"}, []string{"mail"}, []string{"mail", "show"}, []string{"config"}, []string{"config", "check"})
	for group, cmds := range map[string][]cliCommand{"users": usersCommands, "sessions": sessionsCommands, "tokens": tokensCommands, "keys": keysCommands} {
		lines = append(lines, []string{group})
		for _, c := range cmds {
			lines = append(lines, []string{group, c.name})
		}
	}
	for _, line := range lines {
		name := strings.Join(append([]string{"gatehouse"}, line...), " ")
		code, out, errOut := cli(t, "", append(line, "--help")...)
		if code != 0 || !strings.Contains(out, "Usage:") || errOut != "" {
			t.Errorf("%s --help: exit %d, stdout %q, stderr %q", name, code, out, errOut)
		}
		if strings.Contains(out, " \n") {
			t.Errorf("%s --help: a line ends in a space:\n%s", name, out)
		}
		if len(line) == 0 || line[0] == "help" || len(line) == 1 && line[0] != "version" {
			continue // a group: a bad flag is its own test (TestUsageErrorsEverywhere)
		}
		code, _, errOut = cli(t, "", append(line, "--nosuchflag")...)
		if code != 2 || !(strings.Contains(errOut, "unknown flag --nosuchflag")) || !strings.Contains(errOut, "--help") {
			t.Errorf("%s --nosuchflag: exit %d, stderr %q", name, code, errOut)
		}
	}
}
