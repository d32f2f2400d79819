//go:build integration && unix

package deploy

import (
	"fmt"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	corev1 "k8s.io/api/core/v1"
)

// chartSetFlags are the flags the chart sets itself, from other values or
// as the pod's wiring; values.schema.json keeps them out of config.
var chartSetFlags = []string{
	"config", "listen", "admin-listen", "db", "db-file", "mail-dir", "shutdown-timeout", "admin-socket",
	"upstream", "base-url", "allow-emails-file",
}

// chartOmittedFlags are the flags the chart does not offer, and why.
var chartOmittedFlags = map[string]string{
	"tls-domain":     "TLS ends at the Ingress",
	"tls-email":      "TLS ends at the Ingress",
	"acme-ca":        "TLS ends at the Ingress",
	"acme-ca-root":   "TLS ends at the Ingress",
	"tls-storage":    "TLS ends at the Ingress",
	"http-listen":    "TLS ends at the Ingress",
	"tls-cert":       "TLS ends at the Ingress",
	"tls-key":        "TLS ends at the Ingress",
	"templates-dir":  "templates are files the chart does not mount",
	"mail-templates": "templates are files the chart does not mount",
}

// schemaTypes is the JSON schema type of a value of each pflag type.
var schemaTypes = map[string]string{"": "boolean", "string": "string", "duration": "string", "int": "integer", "strings": "array"}

// TestHelmConfigCoversTheFlags: the config value offers exactly Gatehouse's
// flags, each with its type, except those the chart sets itself, the
// secrets (secrets: instead, as files) and the few it omits for a reason. A
// new flag of gatehouse fails here until the chart takes a stand on it.
func TestHelmConfigCoversTheFlags(t *testing.T) {
	flags := gatehouseFlags(t)
	requireConfigFile(t, flags)
	schema := readSchema(t)
	props := schema["properties"].(map[string]any)
	config := props["config"].(map[string]any)["properties"].(map[string]any)
	secrets := props["secrets"].(map[string]any)["properties"].(map[string]any)

	for name, s := range config {
		if name == "routes" {
			continue
		}
		info, ok := flags[name]
		if !ok {
			t.Errorf("values.schema.json offers config.%s, which is no flag of gatehouse", name)
			continue
		}
		if want := schemaTypes[info.typ]; s.(map[string]any)["type"] != want {
			t.Errorf("config.%s has schema type %v; --%s is %q, want %s", name, s.(map[string]any)["type"], name, info.typ, want)
		}
	}
	for name := range secrets {
		if !hasFlag(flags, name+"-file") {
			t.Errorf("secrets.%s would be passed as --%s-file, which is no flag of gatehouse", name, name)
		}
	}
	for _, name := range chartSetFlags {
		if !hasFlag(flags, name) {
			t.Errorf("the chart sets --%s, which is no flag of gatehouse", name)
		}
	}
	for name := range flags {
		secret, isFile := strings.CutSuffix(name, "-file")
		switch {
		case config[name] != nil, slices.Contains(chartSetFlags, name), chartOmittedFlags[name] != "":
		case secrets[name] != nil, isFile && secrets[secret] != nil:
		default:
			t.Errorf("gatehouse has --%s, which the chart neither offers (config or secrets in values.schema.json) nor sets nor omits (chartOmittedFlags)", name)
		}
	}
}

// TestHelmReloadableSettingsKeepThePods: a change of the settings Gatehouse
// re-reads from its file (routes, public-path, the allow-* rules) reaches
// the running pods through the ConfigMap without a restart; a change of any
// other setting changes the pods' checksum annotation, so they roll.
func TestHelmReloadableSettingsKeepThePods(t *testing.T) {
	base := mustRender(t, defaultUpstream)
	checksum := func(r release) string { return r.deployment.Spec.Template.Annotations["checksum/config"] }
	if checksum(base) == "" {
		t.Fatal("no checksum/config annotation on the pods")
	}
	for _, c := range []struct {
		config  string
		restart bool
	}{
		{"routes: [{path: /static/, allow: public}]", false},
		{"public-path: [/favicon.ico]", false},
		{"allow-email-domain: [example.com]", false},
		{"allow-group: [admins]", false},
		// These decide what a sign-in asks the provider for: read at start.
		{"github-org: [example]", true},
		{"github-team: [example/ops]", true},
		{"google-hosted-domain: [example.com]", true},
		{"open-signup: true", true},
		{"mode: \"401\"", true},
		{"session-ttl: 24h", true},
		{"smtp-addr: smtp.example.com:587", true},
		{"trusted-proxies: [10.1.0.0/16]", true},
	} {
		r := mustRender(t, defaultUpstream+"config:\n  "+c.config+"\n")
		if reflect.DeepEqual(r.configMap.Data, base.configMap.Data) {
			t.Errorf("%s: the ConfigMap did not change", c.config)
		}
		if restarted := checksum(r) != checksum(base); restarted != c.restart {
			t.Errorf("%s: pods roll %v, want %v", c.config, restarted, c.restart)
		}
	}
	emails := mustRender(t, defaultUpstream+"allowedEmails: [a@example.com]\n")
	more := mustRender(t, defaultUpstream+"allowedEmails: [a@example.com, b@example.com]\n")
	if checksum(emails) != checksum(more) || reflect.DeepEqual(emails.configMap.Data, more.configMap.Data) {
		t.Error("a change of allowedEmails should change the ConfigMap and keep the pods")
	}
}

// TestHelmChartAgreesWithTheBase: the chart's defaults run the container
// the kustomize base in this folder runs, with the same image, ports,
// paths, probes, security context, resources and drain, and the sidecar
// form the same app container; a change to one shows up here until the
// other follows.
func TestHelmChartAgreesWithTheBase(t *testing.T) {
	b := loadBase(t)
	r := mustRender(t, defaultUpstream)
	// The same image; the chart's tag is a release that reads --config,
	// which may be newer than the base's until the base moves to it.
	img := b.kustomization.Images[0]
	repo, tag, _ := strings.Cut(r.gatehouse.Image, ":")
	var major, minor, patch int
	n, _ := fmt.Sscanf(tag, "v%d.%d.%d", &major, &minor, &patch)
	if repo != img.NewName || n != 3 || fmt.Sprintf("v%d.%d.%d", major, minor, patch) != tag || major < 3 {
		t.Errorf("chart image %s, want %s:vX.Y.Z of a release from v3 on (the first that reads --config)", r.gatehouse.Image, img.NewName)
	}
	chartArgs, _, _ := parseArgs(r.gatehouse.Args, b.flags)
	for _, flag := range []string{"listen", "admin-listen", "db", "mail-dir", "shutdown-timeout"} {
		if chartArgs[flag] != b.args[flag] {
			t.Errorf("--%s: chart %q, base %q", flag, chartArgs[flag], b.args[flag])
		}
	}
	same := func(what string, chart, base any) {
		t.Helper()
		if !reflect.DeepEqual(chart, base) {
			t.Errorf("%s differ:\nchart %+v\nbase  %+v", what, chart, base)
		}
	}
	mountPaths := func(c *corev1.Container, names ...string) map[string]string {
		out := map[string]string{}
		for _, m := range c.VolumeMounts {
			if slices.Contains(names, m.Name) {
				out[m.Name] = m.MountPath
			}
		}
		return out
	}
	chartPod, basePod := r.deployment.Spec.Template.Spec, b.deployment.Spec.Template.Spec
	same("gatehouse ports", r.gatehouse.Ports, b.gatehouse.Ports)
	same("liveness probes", r.gatehouse.LivenessProbe, b.gatehouse.LivenessProbe)
	same("readiness probes", r.gatehouse.ReadinessProbe, b.gatehouse.ReadinessProbe)
	same("gatehouse security contexts", r.gatehouse.SecurityContext, b.gatehouse.SecurityContext)
	same("pod security contexts", chartPod.SecurityContext, basePod.SecurityContext)
	same("termination grace periods", chartPod.TerminationGracePeriodSeconds, basePod.TerminationGracePeriodSeconds)
	same("automountServiceAccountToken", chartPod.AutomountServiceAccountToken, basePod.AutomountServiceAccountToken)
	same("enableServiceLinks", chartPod.EnableServiceLinks, basePod.EnableServiceLinks)
	same("data and mail mounts", mountPaths(r.gatehouse, "data", "mail"), mountPaths(b.gatehouse, "data", "mail"))
	same("gatehouse resources", r.gatehouse.Resources.String(), b.gatehouse.Resources.String())
	same("GOMEMLIMIT", envValue(r.gatehouse, "GOMEMLIMIT"), envValue(b.gatehouse, "GOMEMLIMIT"))
	same("Service ports", r.service.Spec.Ports, b.service.Spec.Ports)
	same("claim size", r.claim.Spec.Resources.String(), b.claim.Spec.Resources.String())
	same("strategy", r.deployment.Spec.Strategy, b.deployment.Spec.Strategy)

	// The NetworkPolicy admits the same peers to the same ports.
	same("NetworkPolicy ingress rules", r.policies[0].Spec.Ingress, b.policy.Spec.Ingress)
	trusted, _ := helmConfig(t, r)["trusted-proxies"].([]any)
	if len(trusted) != 1 || trusted[0] != envValue(b.gatehouse, "GATEHOUSE_TRUSTED_PROXIES") {
		t.Errorf("chart trusts %v, the base %s", trusted, envValue(b.gatehouse, "GATEHOUSE_TRUSTED_PROXIES"))
	}

	// The sidecar example runs the base's app container.
	side := mustRender(t, exampleValues(t, "sidecar.yaml"))
	same("app images", side.app.Image, b.app.Image)
	same("app args", side.app.Args, b.app.Args)
	same("app ports", side.app.Ports, b.app.Ports)
	same("app security contexts", side.app.SecurityContext, b.app.SecurityContext)
	same("app resources", side.app.Resources.String(), b.app.Resources.String())
	same("upstream", helmConfig(t, side)["upstream"], b.args["upstream"])
}

func envValue(c *corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// TestHelmLint runs Helm's own linter (helm lint, with the schema) on the
// chart with the defaults and with each value set: no error and no warning.
func TestHelmLint(t *testing.T) {
	for _, set := range helmValueSets {
		vals, err := chartutil.ReadValues([]byte(set.values(t)))
		if err != nil {
			t.Fatal(err)
		}
		linter := lint.All(chartDir, vals, releaseNamespace, false)
		for _, m := range linter.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("%s: helm lint: %s", set.name, m)
			} else {
				t.Logf("%s: helm lint: %s", set.name, m)
			}
		}
	}
}

// TestHelmStaysInTheTests: only test code imports Helm; the gatehouse
// binary links none of it.
func TestHelmStaysInTheTests(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../cmd/gatehouse").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "helm.sh/") {
			t.Errorf("the gatehouse binary links %s", pkg)
		}
	}
	if !strings.Contains(string(out), "github.com/gatehouse-auth/gatehouse/proxy") {
		t.Fatalf("go list -deps printed no Gatehouse package; the check would pass on anything:\n%s", out)
	}
}
