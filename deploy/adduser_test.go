//go:build integration

package deploy

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// examples/kubernetes/add-user.sh administers the running server with
// `kubectl exec` through its admin socket: nothing is scaled or stopped. A
// fake kubectl runs the command as the container would (the same binary,
// the Deployment's --db moved to the test folder) while the server with the
// Deployment's configuration runs; the user signs in right after.
func TestAddUserScriptWhileRunning(t *testing.T) {
	b := loadBase(t)
	script, err := os.ReadFile("../examples/kubernetes/add-user.sh")
	if err != nil {
		t.Fatal(err)
	}
	podDB := b.args["db"]
	if podDB == "" || !strings.Contains(string(script), "db="+podDB+"\n") {
		t.Fatalf("add-user.sh does not use the Deployment's --db %q", podDB)
	}
	for _, word := range []string{"kubectl scale", "k scale", "--replicas"} {
		if strings.Contains(string(script), word) {
			t.Errorf("add-user.sh still mentions %q", word)
		}
	}
	bin := binary(t, "../cmd/gatehouse")
	runContainerConfig(t, *b.gatehouse, b.secret, drainDeadline(t, b.args, b.flags), func(moved map[string]string) {
		fake := t.TempDir()
		kubectl := `#!/bin/sh
# kubectl --namespace NS exec --stdin deploy/gatehouse -c gatehouse -- gatehouse ARGS...
case " $* " in *" exec "*" deploy/gatehouse -c gatehouse -- gatehouse "*) ;; *) echo "fake kubectl: unexpected $*" >&2; exit 3 ;; esac
while [ "$1" != "--" ]; do shift; done
shift
[ "$1" = gatehouse ] || { echo "fake kubectl: want gatehouse, got $1" >&2; exit 3; }
shift
for a in "$@"; do
	shift
	[ "$a" = "$POD_DB" ] && a=$LOCAL_DB
	set -- "$@" "$a"
done
exec "$FAKE_POD_GATEHOUSE" "$@"
`
		if err := os.WriteFile(filepath.Join(fake, "kubectl"), []byte(kubectl), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("bash", "../examples/kubernetes/add-user.sh", "ann@example.com")
		cmd.Env = []string{"PATH=" + fake + ":" + os.Getenv("PATH"), "POD_DB=" + podDB, "LOCAL_DB=" + moved["db"], "FAKE_POD_GATEHOUSE=" + bin}
		cmd.Stdin = strings.NewReader("a long passphrase here\n")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "added user ann@example.com") {
			t.Fatalf("add-user.sh while the server runs: %v\n%s", err, out)
		}
		resp, err := http.Post("http://"+moved["listen"]+"/auth/login", "application/json",
			bytes.NewReader([]byte(`{"email":"ann@example.com","password":"a long passphrase here"}`)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("sign-in right after add-user.sh: %d, want 200", resp.StatusCode)
		}
	})
}
