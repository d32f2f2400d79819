//go:build unix

package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
)

// freeLoopbackAddr returns a loopback address whose port was free a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	ln := listenLoopback(t)
	defer ln.Close()
	return ln.Addr().String()
}

// builds holds the binaries the tests run (gatehouse, demo-upstream), built
// once per test run; TestMain removes them.
var builds webtest.Builds

// makeRun is one run of .ci/make-run, the script behind `make run`.
type makeRun struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stdout strings.Builder
	lines  chan string
	exited chan error
	stderr string // file
}

func startMakeRun(t *testing.T, work, bin, upstream string, args ...string) *makeRun {
	t.Helper()
	script, err := filepath.Abs("../../.ci/make-run")
	if err != nil {
		t.Fatal(err)
	}
	m := &makeRun{lines: make(chan string, 100), exited: make(chan error, 1), stderr: filepath.Join(t.TempDir(), "stderr.log")}
	m.cmd = exec.Command("bash", append([]string{script}, args...)...)
	m.cmd.Dir = work
	m.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work, "BIN=" + bin, "UPSTREAM=" + upstream}
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := os.Create(m.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	m.cmd.Stderr = stderr
	stdout, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			m.mu.Lock()
			m.stdout.WriteString(scanner.Text() + "\n")
			m.mu.Unlock()
			select {
			case m.lines <- scanner.Text():
			default:
			}
		}
		close(m.lines)
		m.exited <- m.cmd.Wait()
	}()
	t.Cleanup(func() { m.stop(t) })
	return m
}

func (m *makeRun) output() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stdout.String()
}

func (m *makeRun) logs() string {
	b, _ := os.ReadFile(m.stderr)
	return string(b)
}

// stop sends SIGTERM to the script and Gatehouse and waits for them.
func (m *makeRun) stop(t *testing.T) {
	if m.cmd.Process == nil || m.exited == nil {
		return
	}
	_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(time.Minute): // watchdog: SIGTERM must end it
		_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
		t.Errorf("make run did not stop after SIGTERM\n%s", m.logs())
		<-m.exited
	}
	m.exited = nil
}

// waitReady polls /readyz until it answers 200 or the script exits.
func (m *makeRun) waitReady(t *testing.T, admin string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if res, err := http.Get("http://" + admin + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case err := <-m.exited:
			m.exited = nil
			t.Fatalf("make run exited: %v\nstdout:\n%s\nstderr:\n%s", err, m.output(), m.logs())
		default:
		}
	}
	t.Fatalf("make run never became ready\nstdout:\n%s\nstderr:\n%s", m.output(), m.logs())
}

// `make run`: Gatehouse on its embedded defaults (its own database and mail
// folder in the working directory) in front of the demo upstream, a demo
// user created on the first run and printed once, the URL and the command
// that adds a user printed; a second run keeps the database. The listen
// addresses are moved to free ports and the demo upstream is started here,
// so that the test never collides with a real `make run` on :8080/:3000.
func TestMakeRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatalf("make run needs bash: %v", err)
	}
	demo := builds.Binary(t, "../../examples/demo-upstream")
	bin := filepath.Dir(builds.Binary(t, ".")) // both in one folder, as `make run`'s BIN

	// The Makefile's run target is the script, after building into BIN.
	if out, err := exec.Command("make", "-n", "-C", "../..", "run", "BIN="+bin).CombinedOutput(); err != nil ||
		!strings.Contains(string(out), "./.ci/make-run") || !strings.Contains(string(out), "-o "+bin+"/gatehouse ./cmd/gatehouse") {
		t.Fatalf("make -n run: %v\n%s", err, out)
	}

	demoAddr := freeLoopbackAddr(t)
	demoCmd := exec.Command(demo, "--listen", demoAddr)
	if err := demoCmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = demoCmd.Process.Kill(); _ = demoCmd.Wait() }()

	work := t.TempDir()
	listen, admin := freeLoopbackAddr(t), freeLoopbackAddr(t)
	run := startMakeRun(t, work, bin, "http://"+demoAddr, "--listen", listen, "--admin-listen", admin)
	var password string
	userLine := regexp.MustCompile(`^demo user: demo@example\.com / (\S+)`)
	for line := range run.lines {
		if m := userLine.FindStringSubmatch(line); m != nil {
			password = m[1]
			break
		}
	}
	if password == "" {
		t.Fatalf("no demo user printed\nstdout:\n%s\nstderr:\n%s", run.output(), run.logs())
	}
	run.waitReady(t, admin)
	out := run.output()
	for _, want := range []string{"http://localhost:8080/", "gatehouse users add --db gatehouse.db --email", "--password-stdin"} {
		if !strings.Contains(out, want) {
			t.Errorf("make run does not print %q:\n%s", want, out)
		}
	}
	for _, path := range []string{"gatehouse.db"} {
		if _, err := os.Stat(filepath.Join(work, path)); err != nil {
			t.Errorf("make run did not create %s in the working directory: %v", path, err)
		}
	}
	signInThrough := func() {
		t.Helper()
		c := newClient()
		if code, _ := get(t, c, "http://"+listen+"/"); code != http.StatusFound {
			t.Errorf("GET / without a session = %d, want 302", code)
		}
		login(t, c, "http://"+listen, "demo@example.com", password)
		code, body := get(t, c, "http://"+listen+"/")
		if code != http.StatusOK || !strings.Contains(body, "Hello, demo@example.com") {
			t.Errorf("signed-in GET / = %d %.300s, want the demo app's greeting", code, body)
		}
	}
	signInThrough()
	run.stop(t)
	if logs := run.logs(); !strings.Contains(logs, "gatehouse stopped") {
		t.Errorf("no clean stop after SIGTERM:\n%s", logs)
	}

	// A second run keeps the database: no new demo user, the old one works.
	run = startMakeRun(t, work, bin, "http://"+demoAddr, "--listen", listen, "--admin-listen", admin)
	run.waitReady(t, admin)
	if strings.Contains(run.output(), "demo user:") {
		t.Errorf("the second run created the demo user again:\n%s", run.output())
	}
	signInThrough()
	// The commands the banner prints work as printed, while the server runs
	// (through its admin socket): a new demo password, and a new user.
	out = run.output()
	hint := regexp.MustCompile(`(?m)^  a new one:  (.*gatehouse users set-password.*)$`).FindStringSubmatch(out)
	add := regexp.MustCompile(`(?m)^    (printf .*gatehouse users add .*)$`).FindStringSubmatch(out)
	if hint == nil || add == nil || strings.Contains(out, "stop Gatehouse first") {
		t.Fatalf("the second run's banner lacks a working set-password or add line, or says to stop:\n%s", out)
	}
	for _, line := range []string{hint[1], add[1]} {
		cmd := exec.Command("bash", "-c", line)
		cmd.Dir = work
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, b)
		}
	}
	password = "a new long passphrase"
	signInThrough()
	login(t, newClient(), "http://"+listen, "you@example.com", "a long passphrase")

	// A third run while this one runs: one line naming the running
	// gatehouse, before any banner.
	third := startMakeRun(t, work, bin, "http://"+demoAddr, "--listen", freeLoopbackAddr(t), "--admin-listen", freeLoopbackAddr(t))
	for range third.lines {
	}
	err := <-third.exited
	third.exited = nil
	stderr := third.logs()
	if err == nil || strings.Contains(third.output(), "Gatehouse:") || strings.Count(stderr, "\n") != 1 ||
		!strings.Contains(stderr, "gatehouse.db is in use by another gatehouse") {
		t.Errorf("a second make run on the same database: %v\nstdout:\n%s\nstderr:\n%s\nwant one line on stderr saying the database is in use, and no banner",
			err, third.output(), stderr)
	}
	if pid := regexp.MustCompile(`\(pid (\d+)\)`).FindStringSubmatch(stderr); pid != nil {
		if comm, _ := os.ReadFile("/proc/" + pid[1] + "/comm"); strings.TrimSpace(string(comm)) != "gatehouse" {
			t.Errorf("make run names pid %s, which is %q, not the running gatehouse", pid[1], comm)
		}
	}
	run.stop(t)
}

// makeRunArgs runs .ci/make-run with a stand-in gatehouse that records its
// command lines, in work, and returns them with the script's output.
func makeRunArgs(t *testing.T, work string, setPassword bool) (calls [][]string, out string) {
	t.Helper()
	bin, record := standInGatehouse(t, setPassword)
	b, err := runMakeRunScript(t, work, bin, "UPSTREAM=http://127.0.0.1:3999")
	if err != nil {
		t.Fatalf("make-run: %v\n%s", err, b)
	}
	return recordedCalls(t, record), string(b)
}

// standInGatehouse writes, in a folder of its own, a gatehouse that
// records each command line in record and exits 0 (users set-password: 0
// when setPassword, else 2, as a binary without that command).
func standInGatehouse(t *testing.T, setPassword bool) (bin, record string) {
	t.Helper()
	bin = t.TempDir()
	record = filepath.Join(bin, "calls")
	exitSetPassword := "2"
	if setPassword {
		exitSetPassword = "0"
	}
	fake := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\t' \"$a\"; done >>" + record + "\necho >>" + record +
		"\ncase \"$1 $2\" in 'users add') cat >/dev/null;; 'users set-password') exit " + exitSetPassword + ";; esac\nexit 0\n"
	if err := os.WriteFile(filepath.Join(bin, "gatehouse"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, record
}

// runMakeRunScript runs .ci/make-run in work with BIN=bin and env, and
// returns its output (stdout and stderr).
func runMakeRunScript(t *testing.T, work, bin string, env ...string) ([]byte, error) {
	t.Helper()
	script, err := filepath.Abs("../../.ci/make-run")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script)
	cmd.Dir = work
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + work, "BIN=" + bin}, env...)
	return cmd.CombinedOutput()
}

// recordedCalls reads the command lines a stand-in gatehouse recorded.
func recordedCalls(t *testing.T, record string) (calls [][]string) {
	t.Helper()
	data, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		calls = append(calls, strings.Split(strings.TrimSuffix(line, "\t"), "\t"))
	}
	return calls
}

// `make run` binds loopback only, as its banner says: the server command
// line it runs parses to loopback addresses and a localhost base URL.
func TestMakeRunListensOnLoopback(t *testing.T) {
	calls, _ := makeRunArgs(t, t.TempDir(), false)
	server := calls[len(calls)-1]
	c, err := parseServe(server, envOf(nil), io.Discard)
	if err != nil {
		t.Fatalf("make-run's command line %q: %v", server, err)
	}
	for _, addr := range []string{c.Listen, c.AdminListen} {
		host, _, err := net.SplitHostPort(addr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			t.Errorf("make run listens on %q, want a loopback address (command line %q)", addr, server)
		}
	}
	if c.Listen != "127.0.0.1:8080" || c.BaseURL.String() != "http://localhost:8080" {
		t.Errorf("--listen %s, base URL %s; want 127.0.0.1:8080 and http://localhost:8080", c.Listen, c.BaseURL)
	}
}

// A later `make run` (the database exists) says how to get a new demo
// password: with `gatehouse users set-password` when the binary has it.
func TestMakeRunRemindsOfThePassword(t *testing.T) {
	for _, setPassword := range []bool{false, true} {
		work := t.TempDir()
		if err := os.WriteFile(filepath.Join(work, "gatehouse.db"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		calls, out := makeRunArgs(t, work, setPassword)
		if len(calls) == 0 || calls[0][0] == "users" && calls[0][1] == "add" {
			t.Fatalf("a later run added the demo user again: %q", calls)
		}
		want := "remove gatehouse.db and run make run again"
		if setPassword {
			want = "gatehouse users set-password --db gatehouse.db --email demo@example.com --password-stdin"
		}
		if !strings.Contains(out, "demo user demo@example.com keeps the password") || !strings.Contains(out, want) {
			t.Errorf("set-password available %t: output lacks %q:\n%s", setPassword, want, out)
		}
	}
	out, err := exec.Command("make", "-n", "-C", "../..", "run", "BIN="+t.TempDir()).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "first build downloads modules") {
		t.Errorf("make run does not say that the first build takes a while: %v\n%s", err, out)
	}
}
