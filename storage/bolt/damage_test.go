package bolt

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// populated writes a file with enough records for many pages and returns its path.
func populated(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	s := openTest(t, path)
	now := time.Now()
	for i := range 50 {
		u := storage.User{ID: fmt.Sprintf("%032x", i), Email: fmt.Sprintf("user%d@example.com", i), PasswordHash: strings.Repeat("h", 90)}
		must(t, s.CreateUser(t.Context(), u))
	}
	var sessions []storage.Session
	for i := range 3000 {
		sessions = append(sessions, storage.Session{IDHash: storage.HashSecret(fmt.Sprint(i)), UserID: fmt.Sprintf("%032x", i%50),
			Email: "x@example.com", CreatedAt: now, ExpiresAt: now.Add(time.Hour), LastSeen: now})
	}
	must(t, s.ImportSessions(t.Context(), sessions))
	must(t, s.Close())
	return path
}

// Issue 10, item 4: a damaged or unexpected file is an error from Open, never
// a panic, and nothing is created where nothing was.
func TestOpenRefusesDamagedFiles(t *testing.T) {
	cases := []struct {
		name    string
		prepare func(t *testing.T) string
		want    string // in the error
	}{
		{"truncated", func(t *testing.T) string {
			path := populated(t)
			st, _ := os.Stat(path)
			must(t, os.Truncate(path, st.Size()/2))
			return path
		}, "damaged"},
		{"random bytes in data pages", func(t *testing.T) string {
			path := populated(t)
			b, err := os.ReadFile(path)
			must(t, err)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := 4 * 4096; i < len(b); i++ { // keep the meta pages, garble the rest
				b[i] = byte(rng.Uint32())
			}
			must(t, os.WriteFile(path, b, 0o600))
			return path
		}, "damaged"},
		{"empty file", func(t *testing.T) string {
			path := filepath.Join(t.TempDir(), "gatehouse.db")
			must(t, os.WriteFile(path, nil, 0o600))
			return path
		}, "empty"},
		{"missing folder", func(t *testing.T) string {
			return filepath.Join(t.TempDir(), "no-such-dir", "gatehouse.db")
		}, "no-such-dir"},
		{"not a database", func(t *testing.T) string {
			path := filepath.Join(t.TempDir(), "gatehouse.db")
			must(t, os.WriteFile(path, []byte(strings.Repeat("not bbolt\n", 2000)), 0o600))
			return path
		}, "damaged"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.prepare(t)
			before, _ := os.ReadFile(path)
			s, err := Open(path, Options{Timeout: time.Second})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: want one line with %q", err, tc.want)
			}
			after, statErr := os.ReadFile(path)
			if string(after) != string(before) || (before == nil) != os.IsNotExist(statErr) && len(before) > 0 {
				t.Error("Open changed the file")
			}
			if _, err := os.Stat(filepath.Dir(path)); tc.name == "missing folder" && err == nil {
				t.Error("Open created the missing folder")
			}
		})
	}
}

func TestOpenExistingRefusesMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	if _, err := Open(path, Options{MustExist: true}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Open(MustExist) of a missing file: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the file was created: %v", err)
	}
}
