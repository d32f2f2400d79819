package filewatch

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func write(t *testing.T, path, content string, mtime time.Time) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// clock is a settable test clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func look(t *testing.T, w *Watch) string {
	t.Helper()
	data, err := w.Look()
	if err != nil {
		t.Fatalf("Look: %v", err)
	}
	return string(data)
}

func TestLook(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	start := time.Now().Add(-time.Hour)
	write(t, path, "one", start)
	c := &clock{start.Add(time.Minute)}
	w := New(path, nil, c.now)

	if got := look(t, w); got != "one" {
		t.Fatalf("first look = %q, want the contents", got)
	}
	if got := look(t, w); got != "" {
		t.Fatalf("unchanged file returned again: %q", got)
	}

	// A new file renamed over the old one, as editors and ConfigMaps do.
	tmp := filepath.Join(dir, "f.tmp")
	write(t, tmp, "two", start)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if got := look(t, w); got != "two" {
		t.Fatalf("after a rename over it: %q, want two", got)
	}

	// Rewritten in place with the same size and modification time: seen
	// while the modification is recent, by the contents.
	write(t, path, "TWO", start)
	c.t = start.Add(time.Second)
	if got := look(t, w); got != "TWO" {
		t.Fatalf("same-size rewrite within the time granularity: %q, want TWO", got)
	}
	// Touched, contents the same: nothing to report.
	write(t, path, "TWO", start.Add(30*time.Second))
	if got := look(t, w); got != "" {
		t.Fatalf("a touch without change returned %q", got)
	}

	// Forced: returned even unchanged, once.
	w.Force()
	if got := look(t, w); got != "TWO" {
		t.Fatalf("forced look = %q, want TWO", got)
	}
	if got := look(t, w); got != "" {
		t.Fatalf("force outlived its look: %q", got)
	}
}

func TestLookUnreadableReportsOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	old := time.Now().Add(-time.Hour)
	write(t, path, "one", old)
	w := New(path, nil, nil)
	look(t, w)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Look(); err == nil || !w.Failing() {
		t.Fatalf("missing file: err %v, failing %t; want an error", err, w.Failing())
	}
	for range 3 {
		if data, err := w.Look(); err != nil || data != nil {
			t.Fatalf("still missing: %q, %v; want nothing (reported once)", data, err)
		}
	}
	w.Force()
	if _, err := w.Look(); err == nil {
		t.Fatal("a forced look at a missing file reported nothing")
	}
	// Back with the same contents: no longer failing, nothing new.
	write(t, path, "one", old)
	if data, err := w.Look(); err != nil || data != nil || w.Failing() {
		t.Fatalf("back unchanged: %q, %v, failing %t", data, err, w.Failing())
	}
}

// A file rewritten while it is read is never returned torn; the next look
// returns it whole.
func TestLookTornRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	write(t, path, "alice\n", time.Now().Add(-time.Hour))
	final := "alice\nbob@corp.com\n"
	torn := true
	w := New(path, func(name string) ([]byte, error) {
		if torn {
			torn = false
			write(t, name, final, time.Now().Add(time.Second))
			return []byte(final[:len(final)-3]), nil
		}
		return os.ReadFile(name)
	}, nil)
	if data, err := w.Look(); err != nil || data != nil {
		t.Fatalf("torn read returned %q, %v", data, err)
	}
	if got := look(t, w); got != final {
		t.Fatalf("next look = %q, want the whole file", got)
	}
}

func TestPrime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	write(t, path, "one", time.Now())
	w := New(path, nil, nil)
	w.Prime(mustStat(t, path), []byte("one"))
	if got := look(t, w); got != "" {
		t.Fatalf("primed contents returned as a change: %q", got)
	}
}

func mustStat(t *testing.T, path string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// A Kubernetes ConfigMap volume updates its files by pointing the ..data
// symlink at a new folder (the file itself is a symlink through ..data):
// the watch follows the link and sees the new file.
func TestLookConfigMapSwap(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	for _, v := range []string{"v1", "v2"} {
		if err := os.Mkdir(filepath.Join(dir, v), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(dir, "v1", "f"), "one", old)
	write(t, filepath.Join(dir, "v2", "f"), "two", old) // same size, same time
	if err := os.Symlink("v1", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "f")
	if err := os.Symlink(filepath.Join("..data", "f"), path); err != nil {
		t.Fatal(err)
	}
	w := New(path, nil, nil)
	if got := look(t, w); got != "one" {
		t.Fatalf("first look = %q", got)
	}
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink("v2", tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if got := look(t, w); got != "two" {
		t.Fatalf("after the ..data swap: %q, want two", got)
	}
}

// With Settle, new contents come out only when two looks in a row read
// them: a file caught empty or half written is never returned, even when
// the stat no longer changes; Force returns at once.
func TestLookSettle(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	start := time.Now().Add(-time.Hour)
	write(t, path, "whole", start)
	c := &clock{start.Add(time.Minute)}
	w := New(path, nil, c.now)
	w.Settle()
	if got := look(t, w); got != "" {
		t.Fatalf("first look returned %q before a second read", got)
	}
	if got := look(t, w); got != "whole" {
		t.Fatalf("second look = %q, want whole", got)
	}
	write(t, path, "", start.Add(2*time.Minute)) // truncated in place
	c.t = start.Add(time.Hour)                   // and old: the stat alone says "unchanged" at the next look
	if got := look(t, w); got != "" {
		t.Fatalf("an empty file was returned at once")
	}
	write(t, path, "new whole", start.Add(2*time.Minute))
	if got := look(t, w); got != "" {
		t.Fatalf("contents read once were returned: %q", got)
	}
	if got := look(t, w); got != "new whole" {
		t.Fatalf("settled contents = %q, want new whole", got)
	}
	write(t, path, "forced", start.Add(3*time.Minute))
	w.Force()
	if got := look(t, w); got != "forced" {
		t.Fatalf("forced look = %q, want forced at once", got)
	}
}
