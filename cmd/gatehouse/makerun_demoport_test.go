//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `make run` starts the demo upstream on 127.0.0.1:3000 in the background
// and never checks that it came up. When port 3000 is already taken (a
// React/Rails/Grafana dev server, or the demo of another `make run`), the
// demo exits with "bind: address already in use", a line lost in the middle
// of the banner, and Gatehouse starts anyway in front of whatever answers
// on :3000, while the banner says "Upstream: http://127.0.0.1:3000" as if
// it were the demo. A newcomer signs in and sees a stranger's app (with
// the X-Forwarded-* identity headers sent to it). The walkthrough script
// (examples/legacy-host/run.sh) refuses a taken port; make-run should too.
//
// Here the demo upstream is a stand-in that fails the way the real one does
// on a taken port, so the test needs no fixed port.
func TestMakeRunStopsWhenTheDemoUpstreamCannotStart(t *testing.T) {
	bin := t.TempDir()
	record := filepath.Join(bin, "calls")
	fakeGatehouse := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\t' \"$a\"; done >>" + record + "\necho >>" + record +
		"\ncase \"$1 $2\" in 'users add') cat >/dev/null;; 'users set-password') exit 0;; esac\nexit 0\n"
	fakeDemo := "#!/bin/sh\necho \"demo-upstream listening on http://127.0.0.1:3000\" >&2\n" +
		"echo \"listen tcp 127.0.0.1:3000: bind: address already in use\" >&2\nexit 1\n"
	for name, body := range map[string]string{"gatehouse": fakeGatehouse, "demo-upstream": fakeDemo} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script, err := filepath.Abs("../../.ci/make-run")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	cmd := exec.Command("bash", script)
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work, "BIN=" + bin, "UPSTREAM="}
	out, runErr := cmd.CombinedOutput()
	data, _ := os.ReadFile(record)
	var served bool
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if strings.HasPrefix(line, "--listen\t") {
			served = true
		}
	}
	if served {
		t.Errorf("make run started Gatehouse in front of 127.0.0.1:3000 although the demo upstream could not start there\ncalls:\n%s\noutput:\n%s", data, out)
	}
	if runErr == nil || !strings.Contains(string(out), "3000") {
		t.Errorf("make run: %v, want a failure that names port 3000\n%s", runErr, out)
	}
}
