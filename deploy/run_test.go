//go:build integration && unix

package deploy

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// TestLegacyHostWalkthroughRefusesTakenPort: when something else already
// answers on one of its ports, even with 200 to /readyz, run.sh stops with
// "port N is in use" instead of walking through against a stranger.
func TestLegacyHostWalkthroughRefusesTakenPort(t *testing.T) {
	gatehouse := binary(t, "../cmd/gatehouse")
	demo := binary(t, "../examples/demo-upstream")
	for _, taken := range []string{"APP_ADDR", "PROXY_ADDR", "ADMIN_ADDR"} {
		t.Run(taken, func(t *testing.T) {
			stranger := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte("ready\n")) // 200 to everything, /readyz included
			}))
			defer stranger.Close()
			addrs := map[string]string{"APP_ADDR": freeAddr(t), "PROXY_ADDR": freeAddr(t), "ADMIN_ADDR": freeAddr(t)}
			addrs[taken] = stranger.Listener.Addr().String()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "../examples/legacy-host/run.sh")
			cmd.Env = append(os.Environ(), "GATEHOUSE="+gatehouse, "DEMO_UPSTREAM="+demo, "WORK="+t.TempDir())
			for k, v := range addrs {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			cmd.WaitDelay = 5 * time.Second
			out, err := cmd.CombinedOutput()
			_, port, _ := net.SplitHostPort(addrs[taken])
			if err == nil || !strings.Contains(string(out), "port "+port+" is in use") {
				t.Fatalf("run.sh with %s taken: %v, want a failure saying port %s is in use\n%s", taken, err, port, out)
			}
			if strings.Contains(string(out), "walkthrough passed") {
				t.Fatalf("run.sh passed against a stranger:\n%s", out)
			}
		})
	}
}

// TestDeploymentConfigStarts runs the gatehouse binary with the arguments and
// environment of the Deployment's container (Secret values included), so
// that values, not only names, are checked: Gatehouse refuses a bad value at
// start.
func TestDeploymentConfigStarts(t *testing.T) {
	b := loadBase(t)
	runContainerConfig(t, *b.gatehouse, b.secret, drainDeadline(t, b.args, b.flags))
}

// runContainerConfig runs the gatehouse binary with the arguments and
// environment of c, secret references resolved from secret (a missing
// optional key leaves the variable unset, as the kubelet does), until
// /readyz answers 200, then stops it with SIGTERM, which must end it within
// drain. Only what cannot exist outside the pod is moved: the volume paths
// go to a temporary folder and the listeners to free loopback ports.
//
// whileReady, if given, runs once the server is ready, with the moved
// values (db, listen, …) by flag name.
func runContainerConfig(t *testing.T, c corev1.Container, secret *corev1.Secret, drain time.Duration, whileReady ...func(moved map[string]string)) {
	t.Helper()
	dir := t.TempDir()
	admin := freeAddr(t)
	moved := map[string]string{
		"db":           filepath.Join(dir, "gatehouse.db"),
		"mail-dir":     filepath.Join(dir, "mail"),
		"listen":       freeAddr(t),
		"admin-listen": admin,
	}
	var args []string
	for _, a := range c.Args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if v, ok := moved[name]; ok {
			a = "--" + name + "=" + v
		}
		args = append(args, a)
	}
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, e := range c.Env {
		value := e.Value
		if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil {
			v, ok := secretValue(secret, ref.SecretKeyRef.Name, ref.SecretKeyRef.Key)
			switch {
			case !ok && ref.SecretKeyRef.Optional != nil && *ref.SecretKeyRef.Optional:
				continue
			case !ok:
				t.Fatalf("%s refers to Secret %s key %s, which does not exist and is not optional: the pod would not start",
					e.Name, ref.SecretKeyRef.Name, ref.SecretKeyRef.Key)
			}
			value = v
		}
		env = append(env, e.Name+"="+value)
	}

	cmd := exec.Command(binary(t, "../cmd/gatehouse"), args...)
	cmd.Env = env
	// The process writes its log straight into a file: readable at any time
	// without racing the copy goroutines a bytes.Buffer would need.
	logFile, err := os.Create(filepath.Join(dir, "gatehouse.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	logs := func() string {
		data, _ := os.ReadFile(logFile.Name())
		return string(data)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false // set once exited has been received from
	defer func() {
		if !stopped {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()

	// The deadline only bounds a hang; readiness, not time, decides.
	ready := false
	for deadline := time.Now().Add(time.Minute); !ready && time.Now().Before(deadline); {
		select {
		case err := <-exited:
			stopped = true
			t.Fatalf("gatehouse with the container's configuration exited at start: %v\n%s", err, logs())
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := http.Get("http://" + admin + "/readyz"); err == nil {
			resp.Body.Close()
			ready = resp.StatusCode == http.StatusOK
		}
	}
	if !ready {
		t.Fatalf("gatehouse never answered /readyz with 200\n%s", logs())
	}
	for _, f := range whileReady {
		f(moved)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Errorf("gatehouse after SIGTERM: %v\n%s", err, logs())
		}
	case <-time.After(drain):
		t.Errorf("gatehouse did not stop within the drain deadline after SIGTERM\n%s", logs())
	}
}

// secretValue is the value of key in secret (data or stringData) when the
// secret is the one named.
func secretValue(secret *corev1.Secret, name, key string) (string, bool) {
	if secret == nil || secret.Name != name {
		return "", false
	}
	if v, ok := secret.StringData[key]; ok {
		return v, true
	}
	v, ok := secret.Data[key]
	return string(v), ok
}
