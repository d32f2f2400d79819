//go:build unix

package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `make test` says what runs as each suite starts: with --output-sync a
// suite's output comes whole when the suite ends, minutes later on a busy
// machine, and until then make printed nothing. Here go is a stand-in that
// holds every suite until the test has read the announcements.
func TestMakeTestSaysWhatRuns(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	fakeGo := filepath.Join(dir, "go")
	script := "#!/bin/sh\nwhile [ ! -e " + release + " ]; do sleep 0.05; done\necho \"suite output: $*\"\n"
	if err := os.WriteFile(fakeGo, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "--no-print-directory", "-C", "../..", "test", "GO="+fakeGo)
	// Not a part of the make that may run this test (its jobserver, its
	// flags): a make of its own, as from a terminal.
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "MAKEFLAGS" && name != "MFLAGS" && name != "MAKELEVEL" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = os.WriteFile(release, nil, 0o644) // never leave the suites waiting
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
	}()

	want := []string{"unit tests (race)", "integration: browser + ACME", "deploy checks"}
	var before []string
	announced := func() bool {
		for _, w := range want {
			found := false
			for _, l := range before {
				found = found || strings.HasPrefix(l, w)
			}
			if !found {
				return false
			}
		}
		return true
	}
	watchdog := time.After(time.Minute)
	for !announced() {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("make test ended before the suites were released:\n%s", strings.Join(before, "\n"))
			}
			if strings.HasPrefix(l, "suite output:") {
				t.Fatalf("a suite's output came before it was released: %q", l)
			}
			before = append(before, l)
		case <-watchdog:
			t.Fatalf("while the suites run, make test printed only:\n%s\nwant a line for each of %q", strings.Join(before, "\n"), want)
		}
	}

	// Released, the suites' output follows, each suite's lines together
	// (--output-sync kept): its command line, then its output.
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var after []string
	for l := range lines {
		after = append(after, l)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("make test with the stand-in go: %v\n%s", err, strings.Join(append(before, after...), "\n"))
	}
	outputs := 0
	for i, l := range after {
		if !strings.HasPrefix(l, "suite output: test ") {
			continue
		}
		outputs++
		if i == 0 || !strings.HasPrefix(after[i-1], fakeGo+" test ") {
			t.Errorf("suite output %q does not follow its own command line (output sync lost):\n%s", l, strings.Join(after, "\n"))
		}
	}
	if outputs != 3 {
		t.Errorf("%d suite outputs, want 3:\n%s", outputs, strings.Join(after, "\n"))
	}
}
