//go:build integration && unix

package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// examples/legacy-host/README.md, step 6, tells the reader to "read the
// link in the text part (quoted-printable, so `=3D` stands for `=` and a
// line ending in `=` continues on the next)". The mail Gatehouse writes
// has a 7bit text part with the link on one line, as the operator manual
// (docs/behaviour.md: "a part that is ASCII … is written as it is (`7bit`)")
// and run.sh ("The text part is plain 7bit") say. A reader who goes looking
// for =3D and soft line breaks finds none. The walkthrough's own mail
// decides, for the walkthrough and for the manual.
func TestLegacyHostReadmeDescribesTheMailAsWritten(t *testing.T) {
	gatehouse := binary(t, "../cmd/gatehouse")
	demo := binary(t, "../examples/demo-upstream")
	work := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "../examples/legacy-host/run.sh")
	cmd.Env = append(os.Environ(), "GATEHOUSE="+gatehouse, "DEMO_UPSTREAM="+demo, "WORK="+work,
		"APP_ADDR="+freeAddr(t), "PROXY_ADDR="+freeAddr(t), "ADMIN_ADDR="+freeAddr(t))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run.sh: %v\n%s", err, out)
	}
	mails, _ := filepath.Glob(filepath.Join(work, "mail", "*.eml"))
	if len(mails) == 0 {
		t.Fatal("the walkthrough wrote no mail")
	}
	raw, err := os.ReadFile(mails[0])
	if err != nil {
		t.Fatal(err)
	}
	// The encoding of the first part (the text/plain one).
	enc := regexp.MustCompile(`(?i)Content-Transfer-Encoding: *([a-z0-9-]+)`).FindSubmatch(raw)
	if enc == nil {
		t.Fatalf("%s has no Content-Transfer-Encoding:\n%s", mails[0], raw)
	}
	actual := strings.ToLower(string(enc[1]))

	readme, err := os.ReadFile("../examples/legacy-host/README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(readme)), " ")
	for _, m := range regexp.MustCompile(`text part \(([a-z0-9-]+)`).FindAllStringSubmatch(text, -1) {
		if m[1] != actual {
			t.Errorf("examples/legacy-host/README.md says the text part is %s; the walkthrough's mail has Content-Transfer-Encoding %s", m[1], actual)
		}
	}

	manual, err := os.ReadFile("../docs/behaviour.md")
	if err != nil {
		t.Fatal(err)
	}
	stated := regexp.MustCompile("written as it is \\(`([a-z0-9-]+)`\\)").FindAllStringSubmatch(strings.Join(strings.Fields(string(manual)), " "), -1)
	if len(stated) == 0 {
		t.Error("docs/behaviour.md no longer says how an ASCII mail part is written (\"written as it is (`7bit`)\"); update the test or the manual")
	}
	for _, m := range stated {
		if m[1] != actual {
			t.Errorf("docs/behaviour.md says an ASCII part is written as %s; the walkthrough's mail has Content-Transfer-Encoding %s", m[1], actual)
		}
	}
}
