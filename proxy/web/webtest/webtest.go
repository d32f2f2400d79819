// Package webtest is test support shared by the tests of several packages,
// so that it is written once: today, how a test that needs an outside
// program (Chromium, nginx, Caddy, PostgreSQL, PyJWT, axe-core) says that it
// is missing, and a log sink safe for concurrent writes.
//
// Dependencies: the standard library only; imported by _test.go files.
package webtest

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"testing"
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
