package postgres_test

import (
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/postgres"
	"github.com/jackc/pgx/v5"
)

// TestOpenTogetherMigratesOnce: replicas starting at once all open the
// database; the advisory lock makes one of them migrate.
func TestOpenTogetherMigratesOnce(t *testing.T) {
	url := pg.NewDatabase(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), url, postgres.Options{})
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
	}
	conn := connect(t, url)
	var rows, max int
	if err := conn.QueryRow(t.Context(), "SELECT count(*), max(version) FROM gatehouse_schema").Scan(&rows, &max); err != nil {
		t.Fatal(err)
	}
	if rows != postgres.SchemaVersion() || max != postgres.SchemaVersion() {
		t.Fatalf("gatehouse_schema: %d rows up to %d, want each of 1..%d once", rows, max, postgres.SchemaVersion())
	}
}

// TestNewerSchemaRefused: a database migrated by a newer binary is not used.
func TestNewerSchemaRefused(t *testing.T) {
	url := pg.NewDatabase(t)
	s, err := postgres.Open(t.Context(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	conn := connect(t, url)
	if _, err := conn.Exec(t.Context(), "INSERT INTO gatehouse_schema (version) VALUES ($1)", postgres.SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(t.Context(), url, postgres.Options{})
	if !errors.Is(err, postgres.ErrSchemaTooNew) {
		t.Fatalf("Open of a newer schema: %v, want ErrSchemaTooNew", err)
	}
}

// TestUnreachableFailsFast: a server that is not there is an error, quickly, without the password.
func TestUnreachableFailsFast(t *testing.T) {
	_, err := postgres.Open(t.Context(), "postgres://gatehouse:s3cret-pw@/gatehouse?host=/nonexistent-dir", postgres.Options{ConnectTimeout: 2 * time.Second})
	if err == nil {
		t.Fatal("Open of an unreachable server: no error")
	}
	if strings.Contains(err.Error(), "s3cret-pw") {
		t.Fatalf("error shows the password: %v", err)
	}
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(t.Context()) })
	return conn
}

// TestRevocationsNotifyOnCommit: each revoking operation sends its NOTIFY,
// and a session created or touched sends none.
func TestRevocationsNotifyOnCommit(t *testing.T) {
	url := pg.NewDatabase(t)
	s, err := postgres.Open(t.Context(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	listener := connect(t, url)
	if _, err := listener.Exec(t.Context(), "LISTEN "+postgres.RevokeChannel); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	u := storage.User{ID: "u1", Email: "a@example.com", CreatedAt: now}
	if err := s.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	sess := storage.Session{IDHash: storage.HashSecret("sid"), UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour), LastSeen: now}
	if err := s.CreateSession(t.Context(), sess); err != nil {
		t.Fatal(err)
	}
	if err := s.TouchSessions(t.Context(), map[storage.Hash]time.Time{sess.IDHash: now}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		do   func() error
		want string
	}{
		{"DeleteSession", func() error { return s.DeleteSession(t.Context(), sess.IDHash) },
			"s:" + hex.EncodeToString(sess.IDHash[:])},
		{"DeleteUserSessions", func() error { _, err := s.DeleteUserSessions(t.Context(), u.ID); return err }, "u:u1"},
		{"CompleteReset", func() error {
			tok := storage.ResetToken{Hash: storage.HashSecret("token"), UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
			if err := s.IssueResetToken(t.Context(), tok); err != nil {
				return err
			}
			_, _, err := s.CompleteReset(t.Context(), tok.Hash, now, "$argon2id$new", storage.Mail{})
			return err
		}, "u:u1"},
		{"SetUserDisabled", func() error { _, err := s.SetUserDisabled(t.Context(), u.ID, true); return err }, "u:u1"},
		{"DeleteUser", func() error { return s.DeleteUser(t.Context(), u.ID) }, "u:u1"},
	}
	for _, step := range steps {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		n, err := listener.WaitForNotification(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if n.Payload != step.want {
			t.Fatalf("after %s: notification %q, want %q (create or touch must notify nothing)", step.name, n.Payload, step.want)
		}
	}
	if _, err := s.UserByID(t.Context(), u.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("user after DeleteUser: %v", err)
	}
}
