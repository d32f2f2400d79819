// Package pgtest runs a throwaway PostgreSQL server for tests: initdb into a
// temporary folder, pg_ctl start on a Unix socket only (no TCP port), a fresh
// database per test, pg_ctl stop at the end.
//
// One server serves a whole test binary; start it from TestMain:
//
//	var pg *pgtest.Server
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &pg)) }
//
//	func TestX(t *testing.T) { url := pg.NewDatabase(t) ... }
//
// When the PostgreSQL binaries are missing, Main still runs the tests and
// NewDatabase skips each one loudly. initdb refuses to run as root, so a root
// test process runs the server as the "postgres" user (Debian's package
// creates it) and gives it the temporary folder.
//
// Dependencies: pgtest imports the standard library only; it runs the
// PostgreSQL binaries. The tests of storage/postgres and cmd/gatehouse use it.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running PostgreSQL cluster in a temporary folder.
type Server struct {
	bin       string // folder of initdb, pg_ctl, postgres
	dir       string // temporary folder: data/, socket, log
	socketDir string
	cred      *syscall.Credential // nil: run as the current user
	databases atomic.Int64
	missing   string // why there is no server (tests skip)
}

// binDirs are where the binaries are looked for, newest first after $PGTEST_BIN.
func binDirs() []string {
	var dirs []string
	if d := os.Getenv("PGTEST_BIN"); d != "" {
		dirs = append(dirs, d)
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(found)))
	dirs = append(dirs, found...)
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	return dirs
}

// findBin returns the first folder holding initdb and pg_ctl.
func findBin() (string, error) {
	for _, d := range binDirs() {
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	return "", errors.New("initdb and pg_ctl not found (install Debian's postgresql, or set PGTEST_BIN)")
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// RequiredEnv names the variable that turns the loud skip without
// PostgreSQL into a failure; CI=true does the same, so CI never skips.
const RequiredEnv = "PGTEST_REQUIRED"

// Required reports whether a missing PostgreSQL fails the tests instead of
// skipping them.
func Required() bool {
	return os.Getenv(RequiredEnv) == "1" || os.Getenv("CI") == "true"
}

// Missing ends t because PostgreSQL is missing: a loud skip, or a failure
// when Required.
func Missing(t testing.TB, why string) {
	t.Helper()
	if Required() {
		t.Fatal("PostgreSQL is required (" + RequiredEnv + "=1 or CI=true) but missing: " + why)
	}
	t.Skip("SKIP: PostgreSQL not installed: " + why)
}

// Main starts a server, runs the tests, stops the server and returns the
// exit code for os.Exit. *srv is set before the tests run; when PostgreSQL
// is missing, it is a Server whose NewDatabase skips.
func Main(m *testing.M, srv **Server) int {
	s, err := Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "SKIP: PostgreSQL tests: %v\n", err)
		s = &Server{missing: err.Error()}
	}
	*srv = s
	code := m.Run()
	s.Stop()
	return code
}

// Start runs initdb and pg_ctl start. The caller must Stop the server.
func Start() (*Server, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, socketDir: dir}
	if os.Geteuid() == 0 {
		if s.cred, err = postgresUser(); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	if err := s.run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--locale=C"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := s.run("pg_ctl", "start", "-w", "-t", "60", "-D", data, "-l", filepath.Join(dir, "log"), "-o", s.options()); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("%w\n%s", err, log)
	}
	return s, nil
}

// postgresUser returns the credentials of the unprivileged "postgres" user.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root and no unprivileged user to run initdb as: %w", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// run runs one PostgreSQL program as the server's user.
func (s *Server) run(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = s.dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w\n%s", name, err, out.String())
	}
	return nil
}

// Halt stops the server, keeping its data, as an outage would; Resume
// starts it again on the same socket.
func (s *Server) Halt() error {
	return s.run("pg_ctl", "stop", "-m", "fast", "-w", "-D", filepath.Join(s.dir, "data"))
}

// Resume starts a halted server.
func (s *Server) Resume() error {
	return s.run("pg_ctl", "start", "-w", "-t", "60", "-D", filepath.Join(s.dir, "data"), "-l", filepath.Join(s.dir, "log"), "-o", s.options())
}

func (s *Server) options() string {
	return fmt.Sprintf("-c listen_addresses='' -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200", s.dir)
}

// Stop stops the server and removes its folder.
func (s *Server) Stop() {
	if s == nil || s.dir == "" {
		return
	}
	if err := s.run("pg_ctl", "stop", "-m", "immediate", "-w", "-D", filepath.Join(s.dir, "data")); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
	}
	_ = os.RemoveAll(s.dir)
}

// URL returns the connection URL of database name, over the Unix socket.
func (s *Server) URL(name string) string {
	return fmt.Sprintf("postgres:///%s?host=%s&user=postgres", name, s.socketDir)
}

// NewDatabase creates an empty database for t and returns its URL. Without
// a server it skips t loudly.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	if s == nil || s.missing != "" {
		why := "no server"
		if s != nil {
			why = s.missing
		}
		Missing(t, why)
	}
	name := fmt.Sprintf("test_%d", s.databases.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0"); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	return s.URL(name)
}
