// Package filewatch tells when a small file that Gatehouse re-reads while
// running (the emails file, the configuration file) changed: another file
// renamed over it (editors, Kubernetes ConfigMaps), another modification
// time or size, or other contents. It polls: each Look costs a stat, and a
// read only when the file looks changed or was modified moments ago.
//
// Dependencies: filewatch imports only the standard library. proxy/policy
// and cmd/gatehouse use it.
package filewatch

import (
	"crypto/sha256"
	"os"
	"time"
)

// RecentlyModified is how long after its modification time a file is read
// at every look even when it looks unchanged: a rewrite within the file
// system's timestamp granularity that keeps the size would otherwise go
// unseen. The contents' hash tells whether it really changed.
const RecentlyModified = 3 * time.Second

// Watch follows one file. It is not safe for concurrent use: its owner
// serializes Look, Prime and Force.
type Watch struct {
	path string
	// read reads the whole file (a test seam to write the file while it is
	// being read); now is the clock RecentlyModified is judged by.
	read func(path string) ([]byte, error)
	now  func() time.Time

	seen    os.FileInfo // the file as last read whole
	tried   [32]byte    // SHA-256 of the contents last returned
	primed  bool        // tried holds a hash
	failing bool        // the file could not be read at the last look
	force   bool        // the next whole read is returned even if unchanged

	// settle: new contents are returned only once two looks in a row read
	// them whole (Settle); candidate holds their hash until then.
	settle       bool
	candidate    [32]byte
	hasCandidate bool
}

// New watches path, read with read (os.ReadFile when nil), judged by the
// clock now (time.Now when nil).
func New(path string, read func(string) ([]byte, error), now func() time.Time) *Watch {
	if read == nil {
		read = os.ReadFile
	}
	if now == nil {
		now = time.Now
	}
	return &Watch{path: path, read: read, now: now}
}

// Settle makes Look return new contents only when the next look reads the
// same contents again: a file rewritten in place (truncated, then written)
// is empty or half written for a moment, and a look that falls in that
// moment must not hand it out. A change then takes one look longer; Force
// still returns the file at once.
func (w *Watch) Settle() { w.settle = true }

// Path is the watched file's name.
func (w *Watch) Path() string { return w.path }

// Prime records the file as the caller read it before watching (info from
// a Stat taken before the read, data what was read): Look reports only
// changes after it.
func (w *Watch) Prime(info os.FileInfo, data []byte) {
	w.seen, w.tried, w.primed, w.failing = info, sha256.Sum256(data), true, false
}

// Force makes the next Look return the file even when its contents did not
// change, or its error even when already reported (an explicit reload).
func (w *Watch) Force() { w.force = true }

// Failing reports whether the file could not be read at the last look.
func (w *Watch) Failing() bool { return w.failing }

// Look returns the file's contents when they changed since the contents
// last returned (or primed), or when forced. It returns an error when the
// file cannot be read, once until it can be again, and nothing otherwise:
// unchanged, still unreadable, or written while being read (a torn read is
// never returned; the next look reads it again).
func (w *Watch) Look() ([]byte, error) {
	before, err := os.Stat(w.path)
	if err != nil {
		return nil, w.fail(err)
	}
	if w.same(before) && !w.failing && !w.force && !w.hasCandidate && w.now().Sub(before.ModTime()) > RecentlyModified {
		return nil, nil
	}
	data, err := w.read(w.path)
	if err != nil {
		return nil, w.fail(err)
	}
	if after, err := os.Stat(w.path); err != nil || !sameFile(before, after) || after.Size() != int64(len(data)) {
		return nil, nil // written or swapped while being read
	}
	w.failing, w.seen = false, before
	sum := sha256.Sum256(data)
	if sum == w.tried && w.primed && !w.force {
		w.hasCandidate = false
		return nil, nil
	}
	if w.settle && !w.force && (!w.hasCandidate || w.candidate != sum) {
		w.candidate, w.hasCandidate = sum, true // returned if the next look reads it again
		return nil, nil
	}
	w.tried, w.primed, w.force, w.hasCandidate = sum, true, false, false
	return data, nil
}

// fail returns err the first time the file cannot be read (or when the
// look was forced), nil after.
func (w *Watch) fail(err error) error {
	if w.failing && !w.force {
		return nil
	}
	w.failing, w.force = true, false
	return err
}

func (w *Watch) same(fi os.FileInfo) bool { return w.seen != nil && sameFile(w.seen, fi) }

// sameFile reports whether a and b are one file (not another renamed over
// it) with the same modification time and size.
func sameFile(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.ModTime().Equal(b.ModTime()) && a.Size() == b.Size()
}
