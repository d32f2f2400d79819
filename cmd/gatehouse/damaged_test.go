package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 10, item 4: a damaged or unexpected database stops the start with
// one clear line and exit 1, never a panic and a goroutine dump; a users
// command that reads or changes accounts refuses a file that does not exist
// and creates nothing.
func TestDamagedDatabaseStopsStart(t *testing.T) {
	healthy := func(t *testing.T) string {
		db := filepath.Join(t.TempDir(), "g.db")
		for i := range 30 {
			addUser(t, db, strings.Repeat("x", i)+"user@example.com", "correct horse battery staple")
		}
		return db
	}
	cases := []struct {
		name    string
		prepare func(t *testing.T) string
		want    string
	}{
		{"truncated", func(t *testing.T) string {
			db := healthy(t)
			st, err := os.Stat(db)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(db, st.Size()/2); err != nil {
				t.Fatal(err)
			}
			return db
		}, "damaged"},
		{"random bytes in data pages", func(t *testing.T) string {
			db := healthy(t)
			b, err := os.ReadFile(db)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(7, 7))
			for i := 4 * 4096; i < len(b); i++ {
				b[i] = byte(rng.Uint32())
			}
			if err := os.WriteFile(db, b, 0o600); err != nil {
				t.Fatal(err)
			}
			return db
		}, "damaged"},
		{"empty file", func(t *testing.T) string {
			db := filepath.Join(t.TempDir(), "g.db")
			if err := os.WriteFile(db, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return db
		}, "empty file"},
		{"missing folder", func(t *testing.T) string {
			return filepath.Join(t.TempDir(), "missing", "g.db")
		}, "does not exist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := tc.prepare(t)
			var out, errOut bytes.Buffer
			exit := make(chan int, 1)
			go func() {
				exit <- run([]string{"--db", db, "--upstream", "http://127.0.0.1:1", "--listen", "127.0.0.1:0", "--base-url", "http://127.0.0.1:8080", "--admin-listen", "",
					"--mail-dir", filepath.Join(t.TempDir(), "mail")}, nil, &out, &errOut, envOf(nil))
			}()
			var code int
			select {
			case code = <-exit:
			case <-time.After(time.Minute): // watchdog: the start went ahead
				t.Fatal("gatehouse started on the database")
			}
			msg := errOut.String()
			if code != 1 || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tc.want) || strings.Contains(msg, "goroutine") {
				t.Errorf("exit %d, stderr %q; want 1 and one line with %q", code, msg, tc.want)
			}
			if tc.name == "missing folder" {
				if _, err := os.Stat(filepath.Dir(db)); err == nil {
					t.Error("the start created the missing folder")
				}
			}
		})
	}
}

func TestUsersCommandRefusesMissingFile(t *testing.T) {
	for _, args := range [][]string{{"users", "list"}, {"users", "revoke-sessions", "--email", "a@example.com"}} {
		db := filepath.Join(t.TempDir(), "g.db")
		var out, errOut bytes.Buffer
		code := run(append(args, "--db", db), nil, &out, &errOut, envOf(nil))
		if code == 0 || !strings.Contains(errOut.String(), "does not exist") || strings.Count(errOut.String(), "\n") != 1 {
			t.Errorf("%v on a missing file: exit %d, stderr %q", args, code, errOut.String())
		}
		if _, err := os.Stat(db); !os.IsNotExist(err) {
			t.Errorf("%v created the file: %v", args, err)
		}
	}
}
