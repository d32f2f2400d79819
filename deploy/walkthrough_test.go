//go:build unix

package deploy

import (
	"context"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestLegacyHostWalkthrough runs examples/legacy-host/run.sh, the README's
// steps with curl, against freshly built binaries: add a user, sign in,
// forgot and reset through --mail-dir, sign out.
func TestLegacyHostWalkthrough(t *testing.T) {
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the walkthrough needs %s: %v", tool, err)
		}
	}
	gatehouse := binary(t, "../cmd/gatehouse")
	demo := binary(t, "../examples/demo-upstream")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "../examples/legacy-host/run.sh")
	cmd.Env = append(os.Environ(),
		"GATEHOUSE="+gatehouse,
		"DEMO_UPSTREAM="+demo,
		"WORK="+t.TempDir(),
		"APP_ADDR="+freeAddr(t),
		"PROXY_ADDR="+freeAddr(t),
		"ADMIN_ADDR="+freeAddr(t),
	)
	// The script starts two servers; on a timeout, end them with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run.sh: %v\n%s", err, out)
	}
	t.Logf("run.sh:\n%s", out)
}
