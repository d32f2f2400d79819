//go:build unix

package main

import (
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/storage/bolt"
)

// `make run PORT=… UPSTREAM_PORT=… ADMIN_PORT=…` moves Gatehouse, the demo
// upstream and the admin listener off 8080, 3000 and 9090 (taken by another
// dev server, or by a second checkout's make run); the Makefile passes them
// to the script and says so where `make run` is described.
func TestMakeRunTakesPorts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the demo upstream")
	}
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	about := regexp.MustCompile(`(?m)((?:^#.*\n)+)run:`).FindSubmatch(makefile)
	if about == nil {
		t.Fatal("no comment above the Makefile's run target")
	}
	for _, v := range []string{"PORT=", "UPSTREAM_PORT=", "ADMIN_PORT="} {
		if !strings.Contains(string(about[1]), v) {
			t.Errorf("the comment of make run does not mention %s:\n%s", v, about[1])
		}
	}
	out, err := exec.Command("make", "-n", "-C", "../..", "run", "BIN="+t.TempDir(),
		"PORT=18081", "UPSTREAM_PORT=13001", "ADMIN_PORT=19091").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PORT=18081") || !strings.Contains(string(out), "UPSTREAM_PORT=13001") ||
		!strings.Contains(string(out), "ADMIN_PORT=19091") {
		t.Fatalf("make -n run with ports: %v, want them handed to the script:\n%s", err, out)
	}

	// The script: the demo upstream (the real one) on UPSTREAM_PORT,
	// Gatehouse (a stand-in) told PORT and ADMIN_PORT, the banner on PORT.
	bin, record := standInGatehouse(t, true)
	if err := os.Symlink(builds.Binary(t, "../../examples/demo-upstream"), filepath.Join(bin, "demo-upstream")); err != nil {
		t.Fatal(err)
	}
	port := func() string { _, p, _ := net.SplitHostPort(freeLoopbackAddr(t)); return p }
	listen, upstream, admin := port(), port(), port()
	b, err := runMakeRunScript(t, t.TempDir(), bin, "UPSTREAM=", "PORT="+listen, "UPSTREAM_PORT="+upstream, "ADMIN_PORT="+admin)
	if err != nil {
		t.Fatalf("make-run: %v\n%s", err, b)
	}
	calls := recordedCalls(t, record)
	server := calls[len(calls)-1]
	c, err := parseServe(server, envOf(nil), io.Discard)
	if err != nil {
		t.Fatalf("make-run's command line %q: %v", server, err)
	}
	if c.Listen != "127.0.0.1:"+listen || c.AdminListen != "127.0.0.1:"+admin ||
		c.Upstream.String() != "http://127.0.0.1:"+upstream || c.BaseURL.String() != "http://localhost:"+listen {
		t.Errorf("--listen %s --admin-listen %s --upstream %s, base URL %s; want ports %s, %s, %s (command line %q)",
			c.Listen, c.AdminListen, c.Upstream, c.BaseURL, listen, admin, upstream, server)
	}
	if !strings.Contains(string(b), "http://localhost:"+listen+"/") {
		t.Errorf("the banner does not name port %s:\n%s", listen, b)
	}
	if _, err := runMakeRunScript(t, t.TempDir(), bin, "UPSTREAM=", "PORT=80a"); err == nil {
		t.Error("make run PORT=80a succeeded, want a refusal")
	}
}

// A second `make run` while the first one runs stops before its banner,
// with one line saying that the database is in use and by which process,
// instead of printing the banner and then failing on the locked file (a
// log line in the middle of the banner).
func TestMakeRunRefusesADatabaseInUse(t *testing.T) {
	work := t.TempDir()
	// This process holds the file, as a running gatehouse does.
	store, err := bolt.Open(filepath.Join(work, "gatehouse.db"), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	bin, record := standInGatehouse(t, true)
	out, err := runMakeRunScript(t, work, bin, "UPSTREAM=http://127.0.0.1:3999")
	if err == nil {
		t.Fatalf("make run succeeded on a database in use:\n%s", out)
	}
	if _, err := os.Stat(record); err == nil {
		t.Errorf("make run ran gatehouse on a database in use: %q", recordedCalls(t, record))
	}
	msg := string(out)
	if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "gatehouse.db is in use by another gatehouse") {
		t.Errorf("make run printed %q, want one line saying gatehouse.db is in use", msg)
	}
	if _, err := os.Stat("/proc/locks"); err == nil && !strings.Contains(msg, "(pid "+strconv.Itoa(os.Getpid())+")") {
		t.Errorf("make run printed %q, want it to name the process holding the file (pid %d)", msg, os.Getpid())
	}
}
