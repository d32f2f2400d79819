package bolt

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		path := filepath.Join(t.TempDir(), "gatehouse.db")
		t.Cleanup(func() { checkIndexesOf(t, path) }) // runs after the suite closed the store
		return openTest(t, path)
	})
}

func TestConformanceReopen(t *testing.T) {
	storagetest.RunReopen(t, func(t *testing.T) (storage.Store, func(t *testing.T) storage.Store) {
		path := filepath.Join(t.TempDir(), "gatehouse.db")
		t.Cleanup(func() { checkIndexesOf(t, path) })
		return openTest(t, path), func(t *testing.T) storage.Store { return openTest(t, path) }
	})
}

// openTest opens path and fails the test on error; the caller closes.
func openTest(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path, Options{Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return s
}

// A new file is private; a missing folder is refused (TestOpenRefusesDamagedFiles).
func TestOpenCreatesPrivateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	s := openTest(t, path)
	defer s.Close()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Fatalf("file mode %v, want 0600", mode)
	}
}

func TestSecondOpenFailsLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	first := openTest(t, path)
	second, err := Open(path, Options{Timeout: 500 * time.Millisecond})
	if err == nil {
		second.Close()
		t.Fatal("second Open of a held file succeeded, want ErrLocked")
	}
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("error %q does not say the database is locked by another process", err)
	}
	// The wait is the one asked for (the error says how long it waited),
	// so Open never hangs on a held file.
	if !strings.Contains(err.Error(), "waited 500ms") {
		t.Fatalf("error %q does not report the 500ms wait", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	third := openTest(t, path) // the lock is released with Close
	third.Close()
}

func TestRestartKeepsRecords(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	now := time.Date(2031, 1, 2, 3, 4, 5, 6, time.UTC)
	u := storage.User{ID: strings.Repeat("a", 32), Email: "a@example.com", PasswordHash: "$argon2id$x", CreatedAt: now}
	id := storage.Identity{Provider: "github", Subject: "42", UserID: u.ID, CreatedAt: now}
	sess := storage.Session{IDHash: storage.HashSecret("s"), UserID: u.ID, Email: u.Email,
		CreatedAt: now, ExpiresAt: now.Add(time.Hour), LastSeen: now}
	tok := storage.ResetToken{Hash: storage.HashSecret("t"), UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	flow := storage.OAuthFlow{StateHash: storage.HashSecret("f"), Provider: "github", Purpose: storage.PurposeLogin,
		Verifier: "v", Redirect: "/", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}

	s := openTest(t, path)
	must(t, s.CreateUserWithIdentity(ctx, u, id))
	must(t, s.CreateSession(ctx, sess))
	must(t, s.QueueResetMail(ctx, u.ID, now))
	must(t, s.IssueResetToken(ctx, tok))
	must(t, s.CreateOAuthFlow(ctx, flow))
	must(t, s.Close())

	s = openTest(t, path)
	defer s.Close()
	if got, err := s.UserByIdentity(ctx, "github", "42"); err != nil || got != u {
		t.Fatalf("user after restart: %+v, %v; want %+v", got, err, u)
	}
	if got, err := s.Session(ctx, sess.IDHash); err != nil || got != sess {
		t.Fatalf("session after restart: %+v, %v; want %+v", got, err, sess)
	}
	if got, err := s.ResetTokenUser(ctx, tok.Hash, now); err != nil || got.ID != u.ID {
		t.Fatalf("reset token after restart: %+v, %v", got, err)
	}
	if got, err := s.TakeOAuthFlow(ctx, flow.StateHash, now); err != nil || got != flow {
		t.Fatalf("oauth flow after restart: %+v, %v; want %+v", got, err, flow)
	}
	mail, err := s.DueMail(ctx, now, 10)
	if err != nil || len(mail) != 1 || mail[0].To != u.Email {
		t.Fatalf("mail after restart: %+v, %v", mail, err)
	}
	next, err := s.EnqueueMail(ctx, storage.Mail{To: "b@example.com"})
	if err != nil || next <= mail[0].ID {
		t.Fatalf("mail id after restart %d, %v; want more than %d", next, err, mail[0].ID)
	}
}

func TestRawSecretsNeverOnDisk(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	secret := func() string { return rand.Text() + rand.Text() } // 52 base32 characters, 256+ bits
	sessionID, resetToken, state := secret(), secret(), secret()
	now := time.Now()
	s := openTest(t, path)
	must(t, s.CreateUser(ctx, storage.User{ID: "u1", Email: "a@example.com"}))
	must(t, s.CreateSession(ctx, storage.Session{IDHash: storage.HashSecret(sessionID), UserID: "u1",
		ExpiresAt: now.Add(time.Hour), LastSeen: now}))
	must(t, s.IssueResetToken(ctx, storage.ResetToken{Hash: storage.HashSecret(resetToken), UserID: "u1",
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}))
	must(t, s.CreateOAuthFlow(ctx, storage.OAuthFlow{StateHash: storage.HashSecret(state), ExpiresAt: now.Add(time.Hour)}))
	must(t, s.Close())

	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, secret := range map[string]string{"session id": sessionID, "reset token": resetToken, "oauth state": state} {
		if bytes.Contains(file, []byte(secret)) {
			t.Errorf("the raw %s is in the database file", name)
		}
		if h := storage.HashSecret(secret); !bytes.Contains(file, h[:]) {
			t.Errorf("the %s hash is not in the database file: the check reads the wrong bytes", name)
		}
	}
}

// txID is the id of the last committed write transaction.
func txID(t *testing.T, s *Store) int {
	t.Helper()
	tx, err := s.db.Begin(false)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	return tx.ID()
}

func TestMissesWriteNothing(t *testing.T) {
	ctx := t.Context()
	s := openTest(t, filepath.Join(t.TempDir(), "gatehouse.db"))
	defer s.Close()
	now := time.Now()
	must(t, s.CreateUser(ctx, storage.User{ID: "u1", Email: "a@example.com"}))
	must(t, s.IssueResetToken(ctx, storage.ResetToken{Hash: storage.HashSecret("expired"), UserID: "u1",
		CreatedAt: now.Add(-time.Hour), ExpiresAt: now.Add(-time.Minute)}))
	unknown := storage.HashSecret("unknown")
	linking := storage.HashSecret("linking session")
	misses := map[string]func() error{
		"Session":            func() error { _, err := s.Session(ctx, unknown); return err },
		"DeleteSession":      func() error { return s.DeleteSession(ctx, unknown) },
		"TouchSessions":      func() error { return s.TouchSessions(ctx, map[storage.Hash]time.Time{unknown: now}) },
		"DeleteUserSessions": func() error { _, err := s.DeleteUserSessions(ctx, "nobody"); return err },
		"UserByEmail":        func() error { _, err := s.UserByEmail(ctx, "nobody@example.com"); return err },
		"ResetTokenUser":     func() error { _, err := s.ResetTokenUser(ctx, storage.HashSecret("expired"), now); return err },
		"CompleteReset": func() error {
			_, _, err := s.CompleteReset(ctx, storage.HashSecret("expired"), now, "x", storage.Mail{To: "a@example.com"})
			return err
		},
		"TakeOAuthFlow":            func() error { _, err := s.TakeOAuthFlow(ctx, unknown, now); return err },
		"DeleteExpiredSessions":    func() error { _, err := s.DeleteExpiredSessions(ctx, now, time.Hour); return err },
		"DeleteExpiredOAuthFlows":  func() error { _, err := s.DeleteExpiredOAuthFlows(ctx, now); return err },
		"DeleteExpiredResetTokens": func() error { _, err := s.DeleteExpiredResetTokens(ctx, now.Add(-time.Hour)); return err },
		"DeleteMail":               func() error { return s.DeleteMail(ctx, 999) },
		"LinkIdentity again": func() error {
			return s.LinkIdentity(ctx, storage.Identity{Provider: "github", Subject: "1", UserID: "u1"}, linking)
		},
	}
	must(t, s.CreateSession(ctx, storage.Session{IDHash: linking, UserID: "u1", CreatedAt: now, LastSeen: now, ExpiresAt: now.Add(time.Hour)}))
	must(t, s.LinkIdentity(ctx, storage.Identity{Provider: "github", Subject: "1", UserID: "u1"}, linking))
	for name, miss := range misses {
		before := txID(t, s)
		err := miss()
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("%s: %v", name, err)
		}
		if after := txID(t, s); after != before {
			t.Errorf("%s of an unknown or expired record committed a write transaction", name)
		}
	}
	before := txID(t, s)
	must(t, s.CreateSession(ctx, storage.Session{IDHash: unknown, UserID: "u1", ExpiresAt: now}))
	if txID(t, s) == before {
		t.Fatal("txID did not move after CreateSession: the check cannot see writes")
	}
}

func TestCanceledContext(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "gatehouse.db"))
	defer s.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Session(ctx, storage.HashSecret("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Session with a canceled context: %v", err)
	}
	if err := s.CreateUser(ctx, storage.User{ID: "u1", Email: "a@example.com"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("CreateUser with a canceled context: %v", err)
	}
	if _, err := s.UserByID(t.Context(), "u1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("user written despite the canceled context: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestIdleSweepAcrossScanChunks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	s := openTest(t, path)
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	const n = 2*scanChunk + 1234 // three read chunks, several write chunks
	sessions := make([]storage.Session, n)
	wantIdle := 0
	for i := range sessions {
		sessions[i] = storage.Session{IDHash: storage.HashSecret(fmt.Sprint("s", i)), UserID: fmt.Sprint("u", i%7),
			CreatedAt: now, ExpiresAt: now.Add(time.Hour), LastSeen: now}
		if i%3 == 0 {
			sessions[i].LastSeen = now.Add(-time.Hour)
			wantIdle++
		}
	}
	must(t, s.ImportSessions(t.Context(), sessions))
	deleted, err := s.DeleteExpiredSessions(t.Context(), now, 30*time.Minute)
	if err != nil || deleted != wantIdle {
		t.Fatalf("DeleteExpiredSessions = %d, %v; want %d", deleted, err, wantIdle)
	}
	for _, i := range []int{0, 1, 3, n - 1, n - 2} {
		_, err := s.Session(t.Context(), sessions[i].IDHash)
		if idle := i%3 == 0; idle != errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("session %d (idle: %v): %v", i, idle, err)
		}
	}
	must(t, s.Close())
	checkIndexesOf(t, path)
}

func TestImportSessionsRefusesStoredHash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	s := openTest(t, path)
	sess := storage.Session{IDHash: storage.HashSecret("a"), UserID: "u1", ExpiresAt: time.Now()}
	must(t, s.CreateUser(t.Context(), storage.User{ID: "u1", Email: "u1@example.com"}))
	must(t, s.CreateSession(t.Context(), sess))
	other := storage.Session{IDHash: storage.HashSecret("b"), UserID: "u2", ExpiresAt: time.Now()}
	sess.UserID = "u2"
	if err := s.ImportSessions(t.Context(), []storage.Session{other, sess}); err == nil {
		t.Fatal("ImportSessions of a stored hash succeeded")
	}
	if _, err := s.Session(t.Context(), other.IDHash); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("refused import wrote a session: %v", err)
	}
	must(t, s.Close())
	checkIndexesOf(t, path)
}
