//go:build integration

package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
)

// builds holds the gatehouse and demo-upstream binaries, built once.
var builds webtest.Builds

func TestMain(m *testing.M) {
	code := m.Run()
	builds.Cleanup()
	os.Exit(code)
}

// binary builds the main package at pkg (relative to this folder) the first
// time it is asked for and returns the executable's path. A failed build
// fails the test: the manifests are only worth something if the flags they
// use exist in the binary that will read them.
func binary(t *testing.T, pkg string) string {
	t.Helper()
	return builds.Binary(t, pkg)
}

// flagInfo is one flag as `gatehouse --help` lists it.
type flagInfo struct {
	typ string // "" for a boolean flag
	def string // the default as printed, without quotes; "" when none is shown
}

// usageLine matches a line of pflag's FlagUsages:
//
//	--name type      usage text (default x)
//
// The name and the optional type are separated from the usage by at least
// two spaces; boolean flags have no type. A flag with an optional value
// shows it in brackets: --name[=x] or --name type[="x"].
var usageLine = regexp.MustCompile(`^\s+(?:-[a-zA-Z0-9], )?--([a-z0-9][a-z0-9-]*)(?:\[=[^\]]*\])?( [^ \[]+)?(?:\[=[^\]]*\])?  +(.*)$`)

// flagLine is any line that starts like a flag's usage line.
var flagLine = regexp.MustCompile(`^\s+(?:-[a-zA-Z0-9], )?--[a-z0-9]`)

var defaultSuffix = regexp.MustCompile(`\(default (.*)\)$`)

// parseUsage reads the flag lines of a pflag help text. unparsed are the
// lines that look like a flag's but did not parse: a sign that the format
// changed and the check would miss flags.
func parseUsage(help string) (flags map[string]flagInfo, unparsed []string) {
	flags = map[string]flagInfo{}
	sc := bufio.NewScanner(strings.NewReader(help))
	for sc.Scan() {
		m := usageLine.FindStringSubmatch(sc.Text())
		if m == nil {
			if flagLine.MatchString(sc.Text()) {
				unparsed = append(unparsed, sc.Text())
			}
			continue
		}
		info := flagInfo{typ: strings.TrimSpace(m[2])}
		if d := defaultSuffix.FindStringSubmatch(m[3]); d != nil {
			info.def = strings.Trim(d[1], `"`)
		}
		flags[m[1]] = info
	}
	return flags, unparsed
}

// gatehouseFlags returns the flags of the gatehouse server, parsed from the
// --help output of the real binary.
func gatehouseFlags(t *testing.T) map[string]flagInfo {
	t.Helper()
	out, err := exec.Command(binary(t, "../cmd/gatehouse"), "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("gatehouse --help: %v\n%s", err, out)
	}
	flags, unparsed := parseUsage(string(out))
	if len(unparsed) > 0 {
		t.Fatalf("gatehouse --help: cannot parse these flag lines:\n%s", strings.Join(unparsed, "\n"))
	}
	// A sanity check of the parser itself: these flags are in the contract.
	for _, name := range []string{"listen", "upstream", "db", "admin-listen", "cookie-secure", "shutdown-timeout", "smtp-password-file"} {
		if _, ok := flags[name]; !ok {
			t.Fatalf("gatehouse --help lists no --%s; parsed %d flags from:\n%s", name, len(flags), out)
		}
	}
	return flags
}

// envFlag is the flag that the environment variable name sets, by the
// contract's rule GATEHOUSE_ + upper snake case; ok is false for other names.
func envFlag(name string) (flag string, ok bool) {
	rest, ok := strings.CutPrefix(name, "GATEHOUSE_")
	if !ok {
		return "", false
	}
	return strings.ReplaceAll(strings.ToLower(rest), "_", "-"), true
}

// runtimeEnv are the environment variables that are not Gatehouse settings
// but may still be set for it: the Go runtime's own.
var runtimeEnv = map[string]bool{"GOMEMLIMIT": true, "GOMAXPROCS": true, "GOGC": true, "GODEBUG": true, "TZ": true}

// checkEnvName fails the test unless name sets an existing Gatehouse flag
// or is one of the Go runtime's variables.
func checkEnvName(t *testing.T, where, name string, flags map[string]flagInfo) {
	t.Helper()
	flag, ok := envFlag(name)
	switch {
	case !ok && !runtimeEnv[name]:
		t.Errorf("%s: environment variable %s is neither GATEHOUSE_<FLAG> nor a Go runtime variable", where, name)
	case ok && !hasFlag(flags, flag):
		t.Errorf("%s: environment variable %s would set --%s, which gatehouse does not have", where, name, flag)
	}
}

func hasFlag(flags map[string]flagInfo, name string) bool {
	_, ok := flags[name]
	return ok
}

// parseArgs splits command-line arguments into flag name → value. Both
// --name=value and --name value are understood; a boolean flag alone is
// "true". Arguments that are not flags are returned in rest.
func parseArgs(args []string, flags map[string]flagInfo) (values map[string]string, order, rest []string) {
	values = map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			rest = append(rest, a)
			continue
		}
		name, value, hasValue := strings.Cut(name, "=")
		if !hasValue {
			if info, known := flags[name]; known && info.typ == "" {
				value = "true"
			} else if i+1 < len(args) {
				i++
				value = args[i]
			}
		}
		values[name] = value
		order = append(order, name)
	}
	return values, order, rest
}

// checkArgs fails the test for every --flag in args that gatehouse lacks.
func checkArgs(t *testing.T, where string, args []string, flags map[string]flagInfo) map[string]string {
	t.Helper()
	values, order, rest := parseArgs(args, flags)
	for _, name := range order {
		if !hasFlag(flags, name) {
			t.Errorf("%s: gatehouse has no flag --%s", where, name)
		}
	}
	if len(rest) > 0 {
		t.Errorf("%s: arguments that are not flags: %q", where, rest)
	}
	return values
}

// drainDeadline is how long gatehouse waits for requests in flight after
// SIGTERM: --shutdown-timeout as given in values, else its default.
func drainDeadline(t *testing.T, values map[string]string, flags map[string]flagInfo) time.Duration {
	t.Helper()
	raw, ok := values["shutdown-timeout"]
	if !ok {
		raw = flags["shutdown-timeout"].def
	}
	d, err := time.ParseDuration(raw)
	if err != nil {
		t.Fatalf("--shutdown-timeout %q: %v", raw, err)
	}
	return d
}

func TestParseUsage(t *testing.T) {
	help := `Flags:
      --listen string                 address the proxy listens on (default ":8080")
      --cookie-secure[=true|false]    set the Secure attribute on cookies (default true when --base-url is https)
      --trace                         a plain boolean
      --color string[="auto"]         an optional value
      --shutdown-timeout duration     how long SIGTERM waits (default 25s)
      --public-path strings           path served without a session (repeatable)
  -v, --verbose                       more output
`
	got, unparsed := parseUsage(help)
	want := map[string]flagInfo{
		"listen":           {typ: "string", def: ":8080"},
		"cookie-secure":    {def: "true when --base-url is https"},
		"shutdown-timeout": {typ: "duration", def: "25s"},
		"public-path":      {typ: "strings"},
		"verbose":          {},
		"trace":            {},
		"color":            {typ: "string"},
	}
	if len(unparsed) > 0 {
		t.Errorf("unparsed lines: %q", unparsed)
	}
	if len(got) != len(want) {
		t.Fatalf("parsed %v, want %v", got, want)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("--%s: parsed %+v, want %+v", name, got[name], w)
		}
	}
	values, _, rest := parseArgs([]string{"--listen=:1", "--cookie-secure", "--public-path", "/x", "users"}, got)
	if values["listen"] != ":1" || values["cookie-secure"] != "true" || values["public-path"] != "/x" || len(rest) != 1 {
		t.Errorf("parseArgs: %v, rest %q", values, rest)
	}
}
