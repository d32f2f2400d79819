//go:build integration

package deploy

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// documents are the files a reader copies commands from: the README, the
// operator manual (deploy/README.md and its chapters in docs/), the
// engineers' documents and the examples' walkthroughs.
func documents(t *testing.T) []string {
	t.Helper()
	files := []string{"../README.md", "README.md", "../ARCHITECTURE.md", "../PERFORMANCE.md", "../examples/README.md"}
	for _, pattern := range []string{"../docs/*.md", "../examples/*/README.md"} {
		more, _ := filepath.Glob(pattern)
		if len(more) == 0 {
			t.Fatalf("no document matches %s", pattern)
		}
		files = append(files, more...)
	}
	return files
}

// codeLines returns the logical lines of the fenced code blocks of a
// Markdown file: lines continued with a trailing backslash are joined, and
// a shell comment (" # …") is cut off.
func codeLines(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	in, pending := false, ""
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in, pending = !in, ""
			continue
		}
		if !in {
			continue
		}
		if i := strings.Index(line, " # "); i >= 0 {
			line = line[:i]
		}
		if cont, ok := strings.CutSuffix(strings.TrimRight(line, " "), `\`); ok {
			pending += cont + " "
			continue
		}
		lines = append(lines, pending+line)
		pending = ""
	}
	return lines
}

// gatehouseCommand is one invocation of gatehouse in a document: the
// command words before the flags ("users add", or none for the server) and
// the flag names it gives.
type gatehouseCommand struct {
	words []string
	flags []string
	line  string
}

// subcommands take a verb: `gatehouse users add`, `gatehouse keys rotate`.
var subcommands = map[string]bool{"users": true, "sessions": true, "tokens": true, "keys": true, "mail": true, "config": true}

// shellBreak ends a command on a line: a pipe, a list or a redirection.
var shellBreak = regexp.MustCompile(`^(\||\|\||&&|;|&|>|>>|2>&1|<)$`)

// gatehouseCommands finds the invocations of gatehouse in a logical line
// (bin/gatehouse, /usr/local/bin/gatehouse, gatehouse, …). A line that
// starts with a flag is a fragment of a server command ("  --oidc-… \").
// Lines of a transcript ("$ gatehouse --upstrem …") show mistakes on
// purpose and are left out.
func gatehouseCommands(line string) []gatehouseCommand {
	fields := strings.Fields(line)
	if len(fields) == 0 || fields[0] == "$" || fields[0] == "helm" {
		return nil // a transcript, or Helm's release and chart named gatehouse
	}
	clean := func(tok string) string { return strings.Trim(tok, `()[]"'`) }
	var cmds []gatehouseCommand
	collect := func(cmd gatehouseCommand, rest []string) {
		for _, tok := range rest {
			if shellBreak.MatchString(tok) {
				break
			}
			if name, ok := strings.CutPrefix(clean(tok), "--"); ok && name != "" {
				name, _, _ = strings.Cut(name, "=")
				cmd.flags = append(cmd.flags, name)
			}
		}
		cmds = append(cmds, cmd)
	}
	if strings.HasPrefix(fields[0], "--") {
		collect(gatehouseCommand{line: line}, fields)
		return cmds
	}
	for i, tok := range fields {
		if path.Base(tok) != "gatehouse" {
			continue
		}
		cmd := gatehouseCommand{line: line}
		rest := fields[i+1:]
		if len(rest) > 0 && subcommands[rest[0]] {
			n := min(2, len(rest))
			cmd.words, rest = rest[:n], rest[n:]
		} else if len(rest) > 0 && rest[0] == "version" {
			continue // takes no flags
		}
		collect(cmd, rest)
	}
	return cmds
}

func TestGatehouseCommandsParse(t *testing.T) {
	for _, tc := range []struct {
		line  string
		words string
		flags string
	}{
		{"bin/gatehouse --listen 127.0.0.1:8080 --upstream http://127.0.0.1:3000", "", "listen upstream"},
		{"printf '%s\\n' 'x' | bin/gatehouse users add --email a@b --password-stdin", "users add", "email password-stdin"},
		{"gatehouse users add E (--password-stdin | --invite)  add a user", "users add", "password-stdin"},
		{"gatehouse keys rotate [--db F]", "keys rotate", "db"},
		{"  --oidc-issuer-url https://x --oidc-client-id=y", "", "oidc-issuer-url oidc-client-id"},
		{"$ gatehouse --upstrem http://127.0.0.1:3000", "", ""},
		{"install -m 0644 gatehouse.service /etc/systemd/system/", "", ""},
		{"helm install gatehouse deploy/helm/gatehouse --set upstream=http://a", "", ""},
		{"gatehouse tokens create --name n --service s", "tokens create", "name service"},
	} {
		var words, flags []string
		for _, c := range gatehouseCommands(tc.line) {
			words = append(words, c.words...)
			flags = append(flags, c.flags...)
		}
		if strings.Join(words, " ") != tc.words || strings.Join(flags, " ") != tc.flags {
			t.Errorf("%q: words %q flags %q, want %q and %q", tc.line, words, flags, tc.words, tc.flags)
		}
	}
}

// The commands the documents show work as written: every gatehouse command
// and subcommand in their code blocks exists, and every flag given to it is
// one that command's --help lists. A reader who copies a quick-start line
// gets Gatehouse, not "unknown flag".
func TestDocsCommandsUseRealFlags(t *testing.T) {
	bin := binary(t, "../cmd/gatehouse")
	helps := map[string]map[string]flagInfo{}
	flagsOf := func(words []string) map[string]flagInfo {
		key := strings.Join(words, " ")
		if f, ok := helps[key]; ok {
			return f
		}
		out, err := exec.Command(bin, append(append([]string{}, words...), "--help")...).CombinedOutput()
		if err != nil {
			helps[key] = nil
			return nil
		}
		f, unparsed := parseUsage(string(out))
		if len(unparsed) > 0 {
			t.Fatalf("gatehouse %s --help: cannot parse these flag lines:\n%s", key, strings.Join(unparsed, "\n"))
		}
		helps[key] = f
		return f
	}
	seen := 0
	for _, file := range documents(t) {
		for _, line := range codeLines(t, file) {
			for _, cmd := range gatehouseCommands(line) {
				seen++
				flags := flagsOf(cmd.words)
				command := strings.Join(append([]string{"gatehouse"}, cmd.words...), " ")
				if flags == nil {
					t.Errorf("%s: `%s` is not a command (its --help fails): %s", file, command, strings.TrimSpace(cmd.line))
					continue
				}
				for _, name := range cmd.flags {
					if !hasFlag(flags, name) && name != "help" {
						t.Errorf("%s: `%s` has no flag --%s: %s", file, command, name, strings.TrimSpace(cmd.line))
					}
				}
			}
		}
	}
	if seen < 20 {
		t.Fatalf("found only %d gatehouse commands in the documents: the parser reads the wrong lines", seen)
	}
}

// Every `make TARGET` the documents name is a target of the Makefile, and
// the README shows the two commands a newcomer types first.
func TestDocsMakeTargetsExist(t *testing.T) {
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`).FindAllStringSubmatch(string(makefile), -1) {
		targets[m[1]] = true
	}
	named := 0
	check := func(file, target string) {
		named++
		if !targets[target] {
			t.Errorf("%s names `make %s`; the Makefile has no target %s", file, target, target)
		}
	}
	for _, file := range documents(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		// In running text, in backquotes: `make run`, `make image VERSION=…`.
		for _, m := range regexp.MustCompile("`make ([a-z][a-z0-9-]*)").FindAllStringSubmatch(string(data), -1) {
			check(file, m[1])
		}
		// In code blocks, a line that runs make.
		for _, line := range codeLines(t, file) {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "make" && !strings.Contains(f[1], "=") {
				check(file, f[1])
			}
		}
	}
	for _, want := range []string{"run", "test"} {
		data, _ := os.ReadFile("../README.md")
		if !strings.Contains(string(data), "make "+want) {
			t.Errorf("README.md does not show `make %s`", want)
		}
	}
	if named < 5 {
		t.Fatalf("found only %d `make` commands in the documents: the pattern reads the wrong text", named)
	}
}
