package bolt

import (
	"errors"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// limitFileSize makes writes past limit bytes of any file of the process
// fail with EFBIG (the Go runtime ignores SIGXFSZ), as a full disk fails
// them, until the returned function restores the limit.
func limitFileSize(t *testing.T, limit uint64) (restore func()) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skipf("SKIP: getrlimit: %v", err)
	}
	lowered := syscall.Rlimit{Cur: limit, Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lowered); err != nil {
		t.Skipf("SKIP: setrlimit: %v", err)
	}
	var once sync.Once
	restore = func() {
		once.Do(func() {
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
				t.Fatalf("restore RLIMIT_FSIZE: %v", err)
			}
		})
	}
	t.Cleanup(restore)
	return restore
}

// Issue 10, item 5: a write the disk refuses reaches Options.OnWrite with
// its cause; a refusal of the store's own (unknown user) does not; a
// commit after the disk recovers reports nil.
func TestOnWriteReportsDiskFailures(t *testing.T) {
	var mu sync.Mutex
	var got []error
	s, err := Open(filepath.Join(t.TempDir(), "g.db"), Options{OnWrite: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, err)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	must(t, s.CreateUser(ctx, storage.User{ID: "u1", Email: "a@example.com"}))
	if _, err := s.SetPasswordHash(ctx, "nobody", "x"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("SetPasswordHash(unknown): %v", err)
	}
	mu.Lock()
	if len(got) != 1 || got[0] != nil {
		t.Fatalf("reports after one commit and one refusal: %v", got)
	}
	got = nil
	mu.Unlock()

	restore := limitFileSize(t, 8192) // the meta pages only: every data page write fails
	now := time.Now()
	err = s.CreateSession(ctx, storage.Session{IDHash: storage.HashSecret("s"), UserID: "u1", ExpiresAt: now.Add(time.Hour)})
	_, err2 := s.QueueResetRequest(ctx, "nobody@example.com", now)
	restore()
	if !errors.Is(err, syscall.EFBIG) || !errors.Is(err2, syscall.EFBIG) {
		t.Fatalf("writes past the limit: %v, %v; want EFBIG", err, err2)
	}
	mu.Lock()
	if len(got) != 2 || !errors.Is(got[0], syscall.EFBIG) || !errors.Is(got[1], syscall.EFBIG) {
		t.Fatalf("reports of the failed writes: %v", got)
	}
	got = nil
	mu.Unlock()

	must(t, s.CreateSession(ctx, storage.Session{IDHash: storage.HashSecret("s"), UserID: "u1", ExpiresAt: now.Add(time.Hour)}))
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != nil {
		t.Fatalf("report after recovery: %v", got)
	}
}
