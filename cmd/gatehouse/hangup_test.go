package main

import (
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// SIGHUP (a closed terminal, the end of a login session) stops Gatehouse
// as SIGTERM does: in-flight requests drain and the process exits 0,
// rather than dying at once, Go's default for a signal it is not told of.
func TestHangupStopsLikeTerminate(t *testing.T) {
	bin := builds.Binary(t, ".")
	up, _ := echoUpstream(t)
	dir := t.TempDir()
	// Under nohup this process inherits SIGHUP ignored, and a child started
	// so keeps it ignored: gatehouse then rightly stays up on SIGHUP (its
	// owner asked for that). The child must start as from a terminal, with
	// the default disposition: while this process catches SIGHUP, exec
	// gives its children the default, whatever this process inherited.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	g := startBinary(t, bin, filepath.Join(dir, "g.db"), filepath.Join(dir, "mail"), up.URL)
	signal.Stop(hup)
	if err := g.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-g.exited:
		if err != nil {
			t.Errorf("gatehouse after SIGHUP: %v, want a clean stop (exit 0)", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("gatehouse did not stop within 30 s of SIGHUP")
	}
}
