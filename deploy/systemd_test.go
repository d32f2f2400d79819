//go:build integration

package deploy

import (
	"bufio"
	"net"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	unitFile = "../examples/systemd/gatehouse.service"
	envFile  = "../examples/systemd/gatehouse.env.example"
	stateDir = "/var/lib/gatehouse" // StateDirectory=gatehouse
)

// parseUnit reads a systemd unit file into directive → values, in order.
// Continuation lines (ending in a backslash) are joined; section headers
// are dropped, since the directives checked here have unique names.
func parseUnit(t *testing.T, file string) map[string][]string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	var logical string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if logical == "" && (line == "" || line[0] == '#' || line[0] == ';' || line[0] == '[') {
			continue
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			logical += cont + " "
			continue
		}
		logical += line
		key, value, ok := strings.Cut(logical, "=")
		if !ok {
			t.Errorf("%s: not a directive: %q", file, logical)
		}
		out[strings.TrimSpace(key)] = append(out[strings.TrimSpace(key)], strings.TrimSpace(value))
		logical = ""
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// systemdSeconds parses a systemd time span such as "30s", "1min" or "30".
func systemdSeconds(s string) (time.Duration, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	return time.ParseDuration(strings.ReplaceAll(s, "min", "m"))
}

func TestSystemdUnit(t *testing.T) {
	flags := gatehouseFlags(t)
	unit := parseUnit(t, unitFile)
	one := func(key string) string {
		t.Helper()
		if v := unit[key]; len(v) == 1 {
			return v[0]
		}
		t.Errorf("%s: want exactly one %s=, have %q", unitFile, key, unit[key])
		return ""
	}

	exec := strings.Fields(one("ExecStart"))
	if len(exec) == 0 || path.Base(strings.TrimLeft(exec[0], "-@+!:")) != "gatehouse" {
		t.Fatalf("ExecStart=%q does not run gatehouse", exec)
	}
	args := checkArgs(t, unitFile+" ExecStart", exec[1:], flags)

	// ProtectSystem=strict leaves only the state directory writable.
	for _, flag := range []string{"db", "mail-dir", "tls-storage"} {
		if p, ok := args[flag]; ok && !strings.HasPrefix(p, stateDir+"/") {
			t.Errorf("--%s=%s is outside %s, the only writable place", flag, p, stateDir)
		}
	}
	if _, ok := args["db"]; !ok {
		t.Errorf("ExecStart has no --db: the default is relative to the working directory")
	}

	want := map[string]string{
		"NoNewPrivileges":         "yes",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"PrivateDevices":          "yes",
		"StateDirectory":          "gatehouse",
		"MemoryDenyWriteExecute":  "yes",
		"LockPersonality":         "yes",
		"RestrictNamespaces":      "yes",
		"RestrictSUIDSGID":        "yes",
		"SystemCallArchitectures": "native",
		"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
	}
	for key, value := range want {
		if got := one(key); got != value {
			t.Errorf("%s=%q, want %q", key, got, value)
		}
	}
	if !slices.Contains(unit["SystemCallFilter"], "@system-service") {
		t.Errorf("SystemCallFilter=%q, want @system-service among them", unit["SystemCallFilter"])
	}
	if one("DynamicUser") != "yes" && (len(unit["User"]) == 0 || unit["User"][0] == "root") {
		t.Error("the service runs as root: want DynamicUser=yes or a dedicated User=")
	}

	// Capabilities: at most CAP_NET_BIND_SERVICE, and that only when a
	// listener is on a privileged port.
	bounding := strings.Fields(one("CapabilityBoundingSet"))
	ambient := strings.Fields(strings.Join(unit["AmbientCapabilities"], " "))
	for _, c := range append(slices.Clone(bounding), ambient...) {
		if c != "CAP_NET_BIND_SERVICE" {
			t.Errorf("capability %s: only CAP_NET_BIND_SERVICE is needed", c)
		}
	}
	privileged := false
	for _, flag := range []string{"listen", "http-listen", "admin-listen"} {
		if addr, ok := args[flag]; ok {
			if _, port, err := net.SplitHostPort(addr); err == nil {
				if n, _ := strconv.Atoi(port); n > 0 && n < 1024 {
					privileged = true
				}
			}
		}
	}
	if privileged != slices.Contains(ambient, "CAP_NET_BIND_SERVICE") {
		t.Errorf("AmbientCapabilities=%q while a listener on a port below 1024 is %v", ambient, privileged)
	}

	drain := drainDeadline(t, args, flags)
	stop, err := systemdSeconds(one("TimeoutStopSec"))
	if err != nil || stop < drain+time.Second {
		t.Errorf("TimeoutStopSec=%s, want at least the drain deadline %v plus 1s", one("TimeoutStopSec"), drain)
	}
	if one("EnvironmentFile") == "" {
		t.Error("no EnvironmentFile= for the secrets")
	}
}

func TestSystemdEnvironmentFile(t *testing.T) {
	flags := gatehouseFlags(t)
	data, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			t.Errorf("%s:%d: not NAME=value: %q", envFile, i+1, line)
			continue
		}
		checkEnvName(t, envFile, name, flags)
		if strings.Contains(name, "PASSWORD") || strings.Contains(name, "SECRET") {
			if !strings.Contains(value, "REPLACE-ME") {
				t.Errorf("%s:%d: %s should be an obvious placeholder (REPLACE-ME)", envFile, i+1, name)
			}
		}
		n++
	}
	if n == 0 {
		t.Errorf("%s sets no variable", envFile)
	}
}
