//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage/postgres"
	"github.com/jackc/pgx/v5"
)

// startDB runs the server on db and returns its exit code and stderr.
func startDB(t *testing.T, db string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run([]string{"--db", db, "--upstream", "http://127.0.0.1:1", "--base-url", "http://127.0.0.1:2",
		"--listen", "127.0.0.1:0", "--admin-listen", ""}, nil, &out, &errOut, envOf(nil))
	return code, errOut.String()
}

// A wrong URL on a server that answers (no such database), and a URL
// whose password is percent-encoded, stop the start like an unreachable
// one: one line naming --db, the password in no form.
func TestWrongDatabaseURL(t *testing.T) {
	base := pg.NewDatabase(t) // postgres:///test_N?host=DIR&user=postgres
	rest, ok := strings.CutPrefix(base, "postgres:///")
	_, query, ok2 := strings.Cut(rest, "?")
	if !ok || !ok2 {
		t.Fatalf("unexpected test URL %q", base)
	}
	for _, tc := range []struct {
		name string
		db   string
		code int
	}{
		{"no such database", "postgres:///no_such_database?" + query + "&password=pw-s3cret", 1},
		{"encoded password, no such database", "postgres://postgres:pw%2Fs3cret@/no_such_database?" + strings.Replace(query, "&user=postgres", "", 1), 1},
		{"encoded password, unparsable", "postgres://alice:pw%2Fs3cret@host:notaport/db", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := startDB(t, tc.db)
			if code != tc.code || !strings.Contains(msg, "--db") || strings.Count(msg, "\n") != 1 ||
				strings.Contains(msg, "s3cret") || strings.Contains(msg, "%2F") {
				t.Fatalf("exit %d (want %d), stderr %q: want one line naming --db, no password", code, tc.code, msg)
			}
		})
	}
}

// A database migrated by a newer gatehouse stops the start: exit 1, one
// line naming --db and saying so.
func TestNewerSchemaStopsStart(t *testing.T) {
	db := pg.NewDatabase(t)
	s, err := postgres.Open(t.Context(), db, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), "INSERT INTO gatehouse_schema (version) VALUES ($1)", postgres.SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	code, msg := startDB(t, db)
	if code != 1 || !strings.Contains(msg, "--db") || !strings.Contains(msg, "newer") || strings.Count(msg, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q: want exit 1 and one line naming --db and the newer schema", code, msg)
	}
	// The users subcommands refuse it too.
	var out, errOut bytes.Buffer
	if code := run([]string{"users", "list", "--db", db}, nil, &out, &errOut, envOf(nil)); code != 1 || !strings.Contains(errOut.String(), "newer") {
		t.Fatalf("users list on a newer schema: exit %d, stderr %q; want 1 naming the newer schema", code, errOut.String())
	}
}

// The server's PostgreSQL store (the session cache over the database)
// keeps what the sweep needs to run on one replica at a time and to empty
// the shared throttle buckets: losing either in a wrapper would make every
// replica sweep at once, or leave the buckets to grow.
func TestServerStoreSweepsOneReplicaAtATime(t *testing.T) {
	db := pg.NewDatabase(t)
	store, err := openServerStore(db, slog.New(slog.DiscardHandler), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	runner, ok := store.(exclusiveRunner)
	if !ok {
		t.Fatalf("the server's PostgreSQL store %T runs no job exclusively: every replica would sweep at once", store)
	}
	if _, ok := store.(interface {
		DeleteFullRateBuckets(ctx context.Context, now time.Time) (int, error)
	}); !ok {
		t.Fatalf("the server's PostgreSQL store %T cannot delete full throttle buckets", store)
	}
	if sharedLimits(store) == nil {
		t.Fatal("the server's PostgreSQL store counts no throttle in the database")
	}
	// While one sweep runs, another replica's attempt is skipped.
	other, err := openServerStore(db, slog.New(slog.DiscardHandler), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ran, err := runner.Exclusive(t.Context(), "sweep", func(ctx context.Context) error {
		again, err := other.(exclusiveRunner).Exclusive(ctx, "sweep", func(context.Context) error { return nil })
		if err != nil || again {
			t.Errorf("a second replica's sweep during the first: ran %v, err %v; want skipped", again, err)
		}
		return nil
	})
	if err != nil || !ran {
		t.Fatalf("first sweep: ran %v, err %v", ran, err)
	}
}

// Replicas started at the same moment on an empty database all start: one
// of them migrates the schema and makes the first signing key, the others
// wait for it and use that key; none dies reading or adding keys. Five
// rounds, each on a fresh database, give the race its chances.
func TestReplicasStartTogetherOnAnEmptyDatabase(t *testing.T) {
	bin := builds.Binary(t, ".")
	up, _ := echoUpstream(t)
	for round := range 5 {
		t.Run(fmt.Sprint("round ", round+1), func(t *testing.T) {
			db := pg.NewDatabase(t)
			rs := startReplicas(t, bin, db, up.URL, 5)
			// One key for all: each publishes the same single first key.
			var first string
			for i, r := range rs {
				code, _, body := do(t, http.DefaultClient, "GET", r.URL+"/auth/.well-known/jwks.json", "", "")
				if code != http.StatusOK {
					t.Fatalf("replica %d: JWKS %d", i, code)
				}
				if n := strings.Count(body, `"kid"`); n != 1 {
					t.Errorf("replica %d publishes %d keys, want the one first key: %s", i, n, body)
				}
				if i == 0 {
					first = body
				} else if body != first {
					t.Errorf("replica %d publishes %s, replica 0 %s: the replicas sign with different keys", i, body, first)
				}
			}
		})
	}
}

// A replica that starts while another one migrates the empty database
// waits for that migration, however long it takes under load, rather than
// giving up after the connect timeout and exiting. The other replica is
// played by this test: it holds the migration lock (as a migrating
// replica does) for longer than the connect timeout, then lets go.
func TestReplicaWaitsForAnotherOnesMigration(t *testing.T) {
	bin := builds.Binary(t, ".")
	up, _ := echoUpstream(t)
	db := pg.NewDatabase(t)
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), "SELECT pg_advisory_lock($1)", postgres.MigrationLockKey); err != nil {
		t.Fatal(err)
	}
	addr, admin := freeLoopbackAddr(t), freeLoopbackAddr(t)
	r := &replicaProcess{URL: "http://" + addr, Admin: "http://" + admin, exited: make(chan struct{})}
	r.cmd = exec.Command(bin, "--db", db, "--listen", addr, "--admin-listen", admin, "--base-url", r.URL,
		"--upstream", up.URL, "--mail-dir", t.TempDir())
	r.cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	r.cmd.Stdout, r.cmd.Stderr = r, r
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = r.cmd.Wait(); close(r.exited) }()
	t.Cleanup(func() { _ = r.cmd.Process.Signal(syscall.SIGTERM); <-r.exited })
	// The migration "takes" longer than the connect timeout (plus the
	// second the start allows beyond it).
	select {
	case <-r.exited:
		t.Fatalf("the replica exited while another one migrated (%v):\n%s", r.cmd.ProcessState, r.Logs())
	case <-time.After(connectTimeout + 2*time.Second):
	}
	if _, err := conn.Exec(t.Context(), "SELECT pg_advisory_unlock($1)", postgres.MigrationLockKey); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case <-r.exited:
			t.Fatalf("the replica exited after the migration lock was released (%v):\n%s", r.cmd.ProcessState, r.Logs())
		default:
		}
		if res, err := http.Get(r.Admin + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica never became ready:\n%s", r.Logs())
		}
	}
}
