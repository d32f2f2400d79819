package bolt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// Verify reads a closed file without writing it and reports sessions that
// outlived a credential change (written behind the store's back here, as a
// store without the epoch check would have).
func TestVerify(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.db")
	s := openTest(t, path)
	ctx := t.Context()
	now := time.Now()
	must(t, s.CreateUser(ctx, storage.User{ID: "u1", Email: "a@example.com"}))
	must(t, s.CreateSession(ctx, storage.Session{IDHash: storage.HashSecret("fresh"), UserID: "u1", ExpiresAt: now.Add(time.Hour)}))
	must(t, s.QueueResetMail(ctx, "u1", now))
	must(t, s.Close())

	r, err := Verify(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.Users != 1 || r.Sessions != 1 || r.StaleSessions != 0 || r.ResetJobs["u1"] != 1 {
		t.Fatalf("report of a sound file: %+v", r)
	}

	s = openTest(t, path)
	_, err = s.DeleteUserSessions(ctx, "u1") // epoch 1
	must(t, err)
	stale := storage.Session{IDHash: storage.HashSecret("stale"), UserID: "u1", ExpiresAt: now.Add(time.Hour)} // epoch 0
	must(t, s.ImportSessions(ctx, []storage.Session{stale}))                                                   // no epoch check
	must(t, s.Close())
	before, _ := os.ReadFile(path)
	if r, err = Verify(path, time.Second); err != nil || r.StaleSessions != 1 {
		t.Fatalf("report with a session older than its user's epoch: %+v, %v", r, err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("Verify wrote the file")
	}

	b, _ := os.ReadFile(path)
	for i := 4 * 4096; i < len(b); i++ {
		b[i] ^= 0x5a
	}
	must(t, os.WriteFile(path, b, 0o600))
	if _, err := Verify(path, time.Second); err == nil || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Verify of a garbled file: %v; want a one-line error", err)
	}
}
