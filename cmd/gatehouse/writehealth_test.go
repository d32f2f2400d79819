package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Issue 10, item 5: when the disk refuses writes the process keeps serving
// existing sessions, answers 503 where a write is needed, logs one line per
// failure class, and shows it in a metric and in /readyz's body; readiness
// itself stays (see writeHealth). RLIMIT_FSIZE makes writes fail with EFBIG
// as a full disk does. The limit holds for a whole process, so the test
// runs in a child of its own: go test's own files (its test log) are kept
// from it.
func TestWriteFailuresAreVisible(t *testing.T) {
	const child = "GATEHOUSETEST_WRITEHEALTH_CHILD"
	if os.Getenv(child) != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWriteFailuresAreVisible$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), child+"=1")
		out, err := cmd.CombinedOutput()
		switch {
		case err == nil && bytes.Contains(out, []byte("--- SKIP: TestWriteFailuresAreVisible")):
			t.Skipf("SKIP: %s", out)
		case err != nil || !bytes.Contains(out, []byte("--- PASS: TestWriteFailuresAreVisible")):
			t.Fatalf("the child failed (%v):\n%s", err, out)
		}
		return
	}
	upstream, _ := echoUpstream(t)
	db := filepath.Join(t.TempDir(), "g.db")
	addUser(t, db, "alice@example.com", testPassword)
	g := startGatehouse(t, db, "--upstream", upstream.URL)
	signedIn := newClient()
	login(t, signedIn, g.URL, "alice@example.com", testPassword)

	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skipf("SKIP: getrlimit: %v", err)
	}
	full := syscall.Rlimit{Cur: 8192, Max: old.Max} // the meta pages only
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &full); err != nil {
		t.Skipf("SKIP: setrlimit: %v", err)
	}
	var once sync.Once
	restore := func() { once.Do(func() { _ = syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old) }) }
	t.Cleanup(restore)

	for i := range 3 {
		body, _ := json.Marshal(map[string]string{"email": "alice@example.com", "password": testPassword})
		resp, err := newClient().Post(g.URL+"/auth/login", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("sign-in %d on a full disk: %d, want 503", i, resp.StatusCode)
		}
	}
	if code, body := get(t, signedIn, g.URL+"/app"); code != http.StatusOK || !strings.Contains(body, `"path":"/app"`) {
		t.Errorf("an existing session on a full disk: %d %.100s", code, body)
	}
	code, body := get(t, newClient(), g.AdminURL+"/readyz")
	if code != http.StatusOK || !strings.Contains(body, "store writes failing: disk_full since") {
		t.Errorf("/readyz on a full disk: %d %q", code, body)
	}
	_, metrics := get(t, newClient(), g.AdminURL+"/metrics")
	if !strings.Contains(metrics, `gatehouse_store_write_failures_total{class="disk_full"} `) ||
		!strings.Contains(metrics, "gatehouse_store_writes_failing 1") {
		t.Errorf("metrics on a full disk lack the write failures:\n%s", grepLines(metrics, "gatehouse_store_write"))
	}
	if n := strings.Count(g.Logs.String(), "store write failed"); n != 1 {
		t.Errorf("%d 'store write failed' lines for one failure class, want 1:\n%s", n, g.Logs.String())
	}

	restore()
	login(t, newClient(), g.URL, "alice@example.com", testPassword)
	if code, body := get(t, newClient(), g.AdminURL+"/readyz"); code != http.StatusOK || body != "ready\n" {
		t.Errorf("/readyz after the disk recovered: %d %q", code, body)
	}
	if !strings.Contains(g.Logs.String(), "store writes work again") {
		t.Error("no recovery line in the log")
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func TestWriteFailureClasses(t *testing.T) {
	var logs bytes.Buffer
	h := newWriteHealth(slog.New(slog.NewTextHandler(&logs, nil)), func() time.Time { return time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC) })
	reg := prometheus.NewRegistry()
	if err := h.register(reg); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		fmt.Errorf("commit: %w", syscall.ENOSPC), fmt.Errorf("write: %w", syscall.EDQUOT),
		fmt.Errorf("sync: %w", syscall.EROFS), syscall.EIO, errors.New("something else"),
	} {
		h.observe(err)
	}
	for class, want := range map[string]float64{"disk_full": 2, "read_only": 1, "io_error": 1, "other": 1} {
		var m dto.Metric
		if err := h.failures.WithLabelValues(class).Write(&m); err != nil {
			t.Fatal(err)
		}
		if got := m.GetCounter().GetValue(); got != want {
			t.Errorf("%s failures = %v, want %v", class, got, want)
		}
	}
	if n := strings.Count(logs.String(), "store write failed"); n != 4 {
		t.Errorf("%d failure lines for 4 classes:\n%s", n, logs.String())
	}
	if got := h.status(); got != "store writes failing: disk_full since 2030-01-02T03:04:05Z, io_error since 2030-01-02T03:04:05Z, other since 2030-01-02T03:04:05Z, read_only since 2030-01-02T03:04:05Z" {
		t.Errorf("status %q", got)
	}
	h.observe(nil)
	if h.status() != "" {
		t.Errorf("status after a commit: %q", h.status())
	}
}
