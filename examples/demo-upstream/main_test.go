package main

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMain runs the command itself when the test binary is started with
// DEMO_UPSTREAM_RUN_MAIN=1, so a test can watch it as a separate process.
func TestMain(m *testing.M) {
	if os.Getenv("DEMO_UPSTREAM_RUN_MAIN") == "1" {
		os.Args = append([]string{"demo-upstream"}, strings.Fields(os.Getenv("DEMO_UPSTREAM_ARGS"))...)
		main()
		return
	}
	os.Exit(m.Run())
}

// On a taken port the demo prints "demo-upstream listening on http://…"
// and only then fails to bind, so `make run`'s output says the demo is
// listening on :3000 right above the line saying it is not (and what
// answers there is some other program). It should claim to listen only
// once it does.
func TestNoListeningClaimWhenThePortIsTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DEMO_UPSTREAM_RUN_MAIN=1", "DEMO_UPSTREAM_ARGS=--listen "+ln.Addr().String())
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("demo-upstream on a taken port exited 0:\n%s", out)
	}
	if strings.Contains(string(out), "listening on") {
		t.Errorf("demo-upstream on a taken port claims to listen:\n%s", out)
	}
}
