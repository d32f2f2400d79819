package webtest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Missing skips, or fails under GATEHOUSE_REQUIRE_ALL=1: checked in a child
// process, since a failing or skipping test cannot be observed from inside.
func TestMissing(t *testing.T) {
	if os.Getenv("WEBTEST_CHILD") == "1" {
		Missing(t, "nothing %s", "installed")
		t.Fatal("Missing returned")
	}
	for _, tc := range []struct {
		requireAll string
		wantFail   bool
		wantOut    string
	}{
		{"", false, "SKIP: nothing installed"},
		{"1", true, "GATEHOUSE_REQUIRE_ALL=1: nothing may be skipped"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissing$", "-test.v")
		cmd.Env = append(os.Environ(), "WEBTEST_CHILD=1", RequireAllEnv+"="+tc.requireAll)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != tc.wantFail || !strings.Contains(string(out), tc.wantOut) {
			t.Errorf("%s=%q: failed=%v, output:\n%s", RequireAllEnv, tc.requireAll, err != nil, out)
		}
	}
}
