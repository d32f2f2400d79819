//go:build integration

package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// readmeSection returns the part of a Markdown file from the heading line
// until the next heading of the same level, with runs of white space made
// one space so that a value broken across lines still matches.
func readmeSection(t *testing.T, file, heading string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("%s has no %q section", file, heading)
	}
	text = text[start+1:]
	level := heading[:strings.IndexByte(heading, ' ')+1] // "## "
	if end := strings.Index(text[len(heading):], "\n"+level); end >= 0 {
		text = text[:len(heading)+end]
	}
	return strings.Join(strings.Fields(text), " ")
}

// docClaim is one value a README states about the manifests.
type docClaim struct {
	what    string
	pattern string // one capture group: the stated value
	actual  string // what the manifests say
}

// checkClaims fails for every claim the text does not state, or states with
// another value than the manifests.
func checkClaims(t *testing.T, where, text string, claims []docClaim) {
	t.Helper()
	for _, c := range claims {
		m := regexp.MustCompile(c.pattern).FindAllStringSubmatch(text, -1)
		if len(m) == 0 {
			t.Errorf("%s no longer states the %s (pattern %q); update the test or the README", where, c.what, c.pattern)
			continue
		}
		for _, sub := range m {
			if sub[1] != c.actual {
				t.Errorf("%s states the %s as %q, the manifests have %q", where, c.what, sub[1], c.actual)
			}
		}
	}
}

// manifestFacts are the values of the base that the READMEs describe.
func manifestFacts(t *testing.T, b base) map[string]string {
	t.Helper()
	pod := b.deployment.Spec.Template.Spec
	f := map[string]string{
		"upstream":      b.flag("upstream"),
		"admin-listen":  b.flag("admin-listen"),
		"strategy":      string(b.deployment.Spec.Strategy.Type),
		"cpu limit":     b.gatehouse.Resources.Limits.Cpu().String(),
		"memory limit":  b.gatehouse.Resources.Limits.Memory().String(),
		"shutdown":      b.flag("shutdown-timeout"),
		"listen port":   strconv.Itoa(int(listenPort(t, "listen", b.flag("listen")))),
		"app port":      "",
		"service port":  "",
		"claim storage": "",
	}
	if len(b.app.Ports) == 1 {
		f["app port"] = strconv.Itoa(int(b.app.Ports[0].ContainerPort))
	}
	if len(b.service.Spec.Ports) == 1 {
		f["service port"] = strconv.Itoa(int(b.service.Spec.Ports[0].Port))
	}
	if q, ok := b.claim.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		f["claim storage"] = strings.TrimSuffix(q.String(), "Gi")
	}
	if r := b.deployment.Spec.Replicas; r != nil {
		f["replicas"] = strconv.Itoa(int(*r))
	}
	if g := pod.TerminationGracePeriodSeconds; g != nil {
		f["grace"] = strconv.FormatInt(*g, 10)
	}
	if sc := pod.SecurityContext; sc != nil && sc.RunAsUser != nil {
		f["user"] = strconv.FormatInt(*sc.RunAsUser, 10)
	}
	if sc := pod.SecurityContext; sc != nil && sc.FSGroup != nil {
		f["fsGroup"] = strconv.FormatInt(*sc.FSGroup, 10)
	}
	if p := b.gatehouse.LivenessProbe; p != nil && p.HTTPGet != nil {
		f["liveness"] = p.HTTPGet.Path
	}
	if p := b.gatehouse.ReadinessProbe; p != nil && p.HTTPGet != nil {
		f["readiness"] = p.HTTPGet.Path
	}
	for _, e := range b.gatehouse.Env {
		if e.Name == "GOMEMLIMIT" {
			f["GOMEMLIMIT"] = e.Value
		}
	}
	return f
}

// TestKubernetesChapterMatchesManifests: the operator manual's "Deploy on
// Kubernetes" chapter (deploy/README.md) states the ports, the upstream, the
// admin listener and its probes, one replica with Recreate, the user, the
// grace period and the drain as the manifests have them. Its links are
// checked with every other document's (TestDocsLinksResolve).
func TestKubernetesChapterMatchesManifests(t *testing.T) {
	b := loadBase(t)
	f := manifestFacts(t, b)
	text := readmeSection(t, "README.md", "## Deploy on Kubernetes")
	checkClaims(t, "deploy/README.md, Deploy on Kubernetes,", text, []docClaim{
		{"app port", `app container listens on port (\d+)`, f["app port"]},
		{"Gatehouse port", `Gatehouse on (\d+)`, f["listen port"]},
		{"Service target", `Service targets Gatehouse's (\d+)`, f["listen port"]},
		{"upstream", "`--upstream=([^`]+)`", f["upstream"]},
		{"admin listener", "`--admin-listen=([^`]+)`", f["admin-listen"]},
		{"liveness probe", "liveness probe `([^`]+)`", f["liveness"]},
		{"readiness probe", "readiness probe `([^`]+)`", f["readiness"]},
		{"replicas", "`replicas: (\\d+)`", f["replicas"]},
		{"strategy", "strategy `(\\w+)`", f["strategy"]},
		{"user", `non-root (\d+)`, f["user"]},
		{"grace period", "`terminationGracePeriodSeconds: (\\d+)`", f["grace"]},
		{"drain", `(\d+) ?s drain \(` + "`--shutdown-timeout`", strings.TrimSuffix(f["shutdown"], "s")},
	})
}

// TestDeployReadmeMatchesManifests does the same for deploy/README.md, and
// checks that its table of pieces lists exactly the manifests here.
func TestDeployReadmeMatchesManifests(t *testing.T) {
	b := loadBase(t)
	f := manifestFacts(t, b)
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(data)), " ")
	checkClaims(t, "deploy/README.md", text, []docClaim{
		{"Service port", `port (\d+) → Gatehouse's \d+`, f["service port"]},
		{"Service target", `port \d+ → Gatehouse's (\d+)`, f["listen port"]},
		{"volume size", `(\d+) GiB ReadWriteOnce`, f["claim storage"]},
		{"upstream", "`--upstream=([^`]+)`", f["upstream"]},
		{"admin listener", "`--admin-listen=([^`]+)`", f["admin-listen"]},
		{"replicas", "`replicas: (\\d+)`", f["replicas"]},
		{"strategy", "strategy `(\\w+)`", f["strategy"]},
		{"grace period", "`terminationGracePeriodSeconds: (\\d+)`", f["grace"]},
		{"drain", "`--shutdown-timeout` \\((\\w+)\\)", f["shutdown"]},
		{"CPU limit", "`cpu: \"?([^\"`]+)\"?`", f["cpu limit"]},
		{"memory limit", "`memory: ([^`]+)`", f["memory limit"]},
		{"GOMEMLIMIT", "`GOMEMLIMIT=([^`]+)`", f["GOMEMLIMIT"]},
		{"fsGroup", "`fsGroup: (\\d+)`", f["fsGroup"]},
		{"user", `run as user (\d+)`, f["user"]},
	})

	// Every --flag=value in backquotes is a real flag, and the container's
	// value when the container sets it.
	for _, m := range regexp.MustCompile("`--([a-z0-9-]+)=([^`]*)`").FindAllStringSubmatch(text, -1) {
		name, value := m[1], m[2]
		if !hasFlag(b.flags, name) {
			t.Errorf("deploy/README.md mentions --%s, which gatehouse does not have", name)
		} else if v, ok := b.args[name]; ok && v != value {
			t.Errorf("deploy/README.md gives --%s=%s, the Deployment has %q", name, value, v)
		}
	}
	// Every GATEHOUSE_ name sets a real flag (brace lists and a final *
	// expanded), except the Service-link variables it warns about.
	for _, name := range regexp.MustCompile(`GATEHOUSE_[A-Z_{},*]+[A-Z*}]`).FindAllString(text, -1) {
		if strings.Count(name, "}") > strings.Count(name, "{") {
			name = strings.TrimSuffix(name, "}") // {GATEHOUSE_BASE_URL}/auth/…
		}
		if name == "GATEHOUSE_SERVICE_HOST" || name == "GATEHOUSE_PORT" {
			continue
		}
		for _, n := range expandBraces(name) {
			prefix, wildcard := strings.CutSuffix(n, "*")
			flag, _ := envFlag(prefix)
			if wildcard {
				if !slices.ContainsFunc(mapsKeys(b.flags), func(f string) bool { return strings.HasPrefix(f, flag) }) {
					t.Errorf("deploy/README.md mentions %s, but gatehouse has no flag --%s…", name, flag)
				}
				continue
			}
			if !hasFlag(b.flags, flag) {
				t.Errorf("deploy/README.md mentions %s, which would set --%s, which gatehouse does not have", n, flag)
			}
		}
	}

	// The table of pieces names every manifest and nothing else.
	pieces := readmeSection(t, "README.md", "### The pieces")
	var listed []string
	for _, m := range regexp.MustCompile("\\| `([a-z-]+\\.yaml)` \\|").FindAllStringSubmatch(pieces, -1) {
		listed = append(listed, m[1])
	}
	files, _ := filepath.Glob("*.yaml")
	slices.Sort(listed)
	if !slices.Equal(listed, files) {
		t.Errorf("deploy/README.md's table lists %q, deploy/ has %q", listed, files)
	}
}

// expandBraces expands {a,b} lists: GATEHOUSE_{A,B}_X → GATEHOUSE_A_X, GATEHOUSE_B_X.
func expandBraces(s string) []string {
	open := strings.IndexByte(s, '{')
	if open < 0 {
		return []string{s}
	}
	end := strings.IndexByte(s[open:], '}')
	if end < 0 {
		return []string{s}
	}
	var out []string
	for _, alt := range strings.Split(s[open+1:open+end], ",") {
		out = append(out, expandBraces(s[:open]+alt+s[open+end+1:])...)
	}
	return out
}

func mapsKeys(m map[string]flagInfo) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

func TestExpandBraces(t *testing.T) {
	got := expandBraces("GATEHOUSE_{GOOGLE,GITHUB}_CLIENT_{ID,SECRET}")
	want := []string{"GATEHOUSE_GOOGLE_CLIENT_ID", "GATEHOUSE_GOOGLE_CLIENT_SECRET", "GATEHOUSE_GITHUB_CLIENT_ID", "GATEHOUSE_GITHUB_CLIENT_SECRET"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("expandBraces = %q, want %q", got, want)
	}
}
