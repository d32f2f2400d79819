// Package webtest is test support shared by the tests of several packages,
// so that it is written once: how a test that needs an outside program
// (Chromium, nginx, Caddy, PostgreSQL, PyJWT, axe-core) says that it is
// missing, a log sink safe for concurrent writes, a clock that moves only
// when told, and the real binaries built once per test run.
//
// Dependencies: the standard library only; imported by _test.go files.
package webtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// RequireAllEnv, when set to 1, turns every Missing into a failure: .ci/run
// sets it, so CI never passes by skipping a suite whose server it failed to
// install.
const RequireAllEnv = "GATEHOUSETEST_REQUIRE_ALL" // not GATEHOUSE_*: the binary refuses unknown GATEHOUSE_ variables

// Missing reports that what a test needs is not installed: a loud skip, on
// the test's log and on stderr (which go test shows even without -v), or a
// failure when RequireAllEnv is 1.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := "SKIP: " + fmt.Sprintf(format, args...)
	if os.Getenv(RequireAllEnv) == "1" {
		t.Fatalf("%s (%s=1: nothing may be skipped)", msg, RequireAllEnv)
	}
	fmt.Fprintln(os.Stderr, "!!! "+t.Name()+": "+msg)
	t.Skip(msg)
}

// LogBuffer is a log sink for tests, safe for concurrent writes: the
// server's goroutines write while the test reads.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Reset forgets what was written.
func (b *LogBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

// Clock is a clock that moves only when told to, for the Clock (or Now)
// that the packages under test take. Safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock is a Clock standing at start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Builds builds main packages for tests that run the real programs, once
// per test binary run whatever the number of tests that ask, into one
// folder that Cleanup removes (call it from TestMain). Safe for concurrent
// use; the zero value is ready.
type Builds struct {
	mu     sync.Mutex
	dir    string
	builds map[string]func() (string, error)
}

// Binary builds the main package at pkg (a path relative to the test's
// package folder) the first time it is asked for and returns the
// executable's path, named after the package's folder; every binary sits in
// the same folder. A failed build fails the test.
func (b *Builds) Binary(t testing.TB, pkg string) string {
	t.Helper()
	abs, err := filepath.Abs(pkg)
	if err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	if b.dir == "" {
		if b.dir, err = os.MkdirTemp("", "gatehouse-test-bin-"); err != nil {
			b.mu.Unlock()
			t.Fatal(err)
		}
	}
	build, ok := b.builds[abs]
	if !ok {
		out := filepath.Join(b.dir, filepath.Base(abs))
		build = sync.OnceValues(func() (string, error) {
			if msg, err := exec.Command("go", "build", "-o", out, abs).CombinedOutput(); err != nil {
				return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, msg)
			}
			return out, nil
		})
		if b.builds == nil {
			b.builds = map[string]func() (string, error){}
		}
		b.builds[abs] = build
	}
	b.mu.Unlock()
	path, err := build()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// Cleanup removes the built binaries.
func (b *Builds) Cleanup() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}
