//go:build integration

package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// manifestDirs are the folders whose YAML files are Kubernetes or kustomize
// documents, relative to this package.
var manifestDirs = []string{".", "../examples/kubernetes"}

// kustomization is the part of kustomize's Kustomization that the manifests
// here use. Decoding is strict, so a field this struct lacks fails the test:
// add it here when a kustomization starts using it.
type kustomization struct {
	metav1.TypeMeta `json:",inline"`
	Namespace       string   `json:"namespace,omitempty"`
	NamePrefix      string   `json:"namePrefix,omitempty"`
	Resources       []string `json:"resources,omitempty"`
	Images          []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
	} `json:"images,omitempty"`
	Patches []struct {
		Path   string `json:"path"`
		Target *struct {
			Kind string `json:"kind,omitempty"`
			Name string `json:"name,omitempty"`
		} `json:"target,omitempty"`
	} `json:"patches,omitempty"`
	SecretGenerator []struct {
		Name     string   `json:"name"`
		Behavior string   `json:"behavior,omitempty"`
		Literals []string `json:"literals,omitempty"`
	} `json:"secretGenerator,omitempty"`
}

// kinds maps apiVersion/kind to a new value of the official type.
var kinds = map[string]func() any{
	"apps/v1/Deployment":                 func() any { return new(appsv1.Deployment) },
	"v1/Service":                         func() any { return new(corev1.Service) },
	"v1/Secret":                          func() any { return new(corev1.Secret) },
	"v1/ConfigMap":                       func() any { return new(corev1.ConfigMap) },
	"v1/Namespace":                       func() any { return new(corev1.Namespace) },
	"v1/PersistentVolumeClaim":           func() any { return new(corev1.PersistentVolumeClaim) },
	"networking.k8s.io/v1/NetworkPolicy": func() any { return new(networkingv1.NetworkPolicy) },
	"policy/v1/PodDisruptionBudget":      func() any { return new(policyv1.PodDisruptionBudget) },
	"kustomize.config.k8s.io/v1beta1/Kustomization": func() any { return new(kustomization) },
}

// decodeStrict decodes one YAML document into the official type of its
// kind, the way the API server's strict field validation does: unknown
// fields, fields in the wrong case and duplicate keys are errors.
func decodeStrict(doc []byte) (any, error) {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return nil, err
	}
	newObject, ok := kinds[meta.APIVersion+"/"+meta.Kind]
	if !ok {
		return nil, fmt.Errorf("apiVersion %q kind %q: no decoder (add the type to kinds)", meta.APIVersion, meta.Kind)
	}
	data, err := yaml.YAMLToJSONStrict(doc) // duplicate keys fail here
	if err != nil {
		return nil, err
	}
	obj := newObject()
	strict, err := sigsjson.UnmarshalStrict(data, obj)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		return nil, errors.Join(strict...)
	}
	return obj, nil
}

// splitDocuments splits a YAML stream at its "---" lines and drops the
// documents that hold only comments and blank lines.
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur []byte
	flush := func() {
		for _, line := range bytes.Split(cur, []byte("\n")) {
			if l := bytes.TrimSpace(line); len(l) > 0 && l[0] != '#' {
				docs = append(docs, cur)
				break
			}
		}
		cur = nil
	}
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if string(bytes.TrimRight(line, " \r\n")) == "---" {
			flush()
			continue
		}
		cur = append(cur, line...)
	}
	flush()
	return docs
}

// manifest is one decoded document.
type manifest struct {
	file string // relative to this package
	obj  any
}

// loadManifests decodes every document of every YAML file in dir.
func loadManifests(t *testing.T, dir string) []manifest {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.yaml", "*.yml"} {
		m, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	slices.Sort(files)
	if len(files) == 0 {
		t.Fatalf("%s: no YAML files", dir)
	}
	var out []manifest
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range splitDocuments(data) {
			obj, err := decodeStrict(doc)
			if err != nil {
				t.Errorf("%s, document %d: %v", file, i+1, err)
				continue
			}
			out = append(out, manifest{file, obj})
		}
	}
	return out
}

// only returns the single value of type T among ms.
func only[T any](t *testing.T, ms []manifest) T {
	t.Helper()
	var found []T
	for _, m := range ms {
		if v, ok := m.obj.(T); ok {
			found = append(found, v)
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("want exactly one %T in deploy/, found %d", zero, len(found))
	}
	return found[0]
}

// base is the kustomize base in this folder.
type base struct {
	kustomization *kustomization
	deployment    *appsv1.Deployment
	service       *corev1.Service
	secret        *corev1.Secret
	claim         *corev1.PersistentVolumeClaim
	policy        *networkingv1.NetworkPolicy

	app, gatehouse *corev1.Container
	flags          map[string]flagInfo // the real binary's
	args           map[string]string   // the gatehouse container's flags
}

func loadBase(t *testing.T) base {
	t.Helper()
	ms := loadManifests(t, ".")
	if t.Failed() {
		t.FailNow()
	}
	b := base{
		kustomization: only[*kustomization](t, ms),
		deployment:    only[*appsv1.Deployment](t, ms),
		service:       only[*corev1.Service](t, ms),
		secret:        only[*corev1.Secret](t, ms),
		claim:         only[*corev1.PersistentVolumeClaim](t, ms),
		policy:        only[*networkingv1.NetworkPolicy](t, ms),
	}
	containers := b.deployment.Spec.Template.Spec.Containers
	if len(containers) != 2 {
		t.Fatalf("the pod has %d containers, want 2 (the app and gatehouse)", len(containers))
	}
	for i := range containers {
		if containers[i].Name == "gatehouse" {
			b.gatehouse = &containers[i]
		} else {
			b.app = &containers[i]
		}
	}
	if b.gatehouse == nil || b.app == nil {
		t.Fatal(`want one container named "gatehouse" and one app container`)
	}
	b.flags = gatehouseFlags(t)
	b.args, _, _ = parseArgs(b.gatehouse.Args, b.flags) // TestEveryFlagAndVariableExists checks them
	if len(b.gatehouse.Command) > 0 {
		t.Errorf("container gatehouse overrides the image's entrypoint with %q", b.gatehouse.Command)
	}
	return b
}

// flag returns the gatehouse container's value of a flag, or its default.
func (b base) flag(name string) string {
	if v, ok := b.args[name]; ok {
		return v
	}
	return b.flags[name].def
}

// containerPort resolves a port given by name or number to the container
// that declares it; nil when none does.
func containerPort(pod *corev1.PodSpec, port intstr.IntOrString) (*corev1.Container, *corev1.ContainerPort) {
	for i := range pod.Containers {
		c := &pod.Containers[i]
		for j := range c.Ports {
			p := &c.Ports[j]
			if port.Type == intstr.String && p.Name == port.StrVal || port.Type == intstr.Int && p.ContainerPort == port.IntVal {
				return c, p
			}
		}
	}
	return nil, nil
}

// listenPort is the port of a host:port listen address.
func listenPort(t *testing.T, flag, addr string) int32 {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("--%s=%q: %v", flag, addr, err)
	}
	n, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		t.Fatalf("--%s=%q: port: %v", flag, addr, err)
	}
	return int32(n)
}

func TestManifestsDecodeStrictly(t *testing.T) {
	for _, dir := range manifestDirs {
		if len(loadManifests(t, dir)) == 0 {
			t.Errorf("%s: no documents", dir)
		}
	}
}

// TestStrictDecodingRejectsMistakes proves that the decoding above would
// catch a typo: each case breaks one real manifest in one place.
func TestStrictDecodingRejectsMistakes(t *testing.T) {
	cases := []struct {
		name, file, from, to string
	}{
		{"misspelled pod field", "deployment.yaml", "terminationGracePeriodSeconds:", "terminationGracePeriodSecond:"},
		{"misspelled container field", "deployment.yaml", "readinessProbe:", "readynessProbe:"},
		{"field in the wrong case", "deployment.yaml", "readOnlyRootFilesystem:", "readOnlyRootFileSystem:"},
		{"field at the wrong level", "deployment.yaml", "  replicas: 1", "  replicas: 1\n  terminationGracePeriodSeconds: 30"},
		{"duplicate key", "service.yaml", "  type: ClusterIP", "  type: ClusterIP\n  type: NodePort"},
		{"misspelled service field", "service.yaml", "targetPort:", "targetport:"},
		{"unknown kustomization field", "kustomization.yaml", "resources:", "resource:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, err := os.ReadFile(c.file)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := decodeStrict(data); err != nil {
				t.Fatalf("%s as it is: %v", c.file, err)
			}
			if !bytes.Contains(data, []byte(c.from)) {
				t.Fatalf("%s does not contain %q", c.file, c.from)
			}
			broken := bytes.Replace(data, []byte(c.from), []byte(c.to), 1)
			if _, err := decodeStrict(broken); err == nil {
				t.Errorf("%s with %q replaced by %q decoded without error", c.file, c.from, c.to)
			} else {
				t.Logf("rejected as expected: %v", err)
			}
		})
	}
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	b := loadBase(t)
	files, _ := filepath.Glob("*.yaml")
	var want []string
	for _, f := range files {
		if f != "kustomization.yaml" {
			want = append(want, f)
		}
	}
	got := slices.Sorted(slices.Values(b.kustomization.Resources))
	if !slices.Equal(got, want) {
		t.Errorf("kustomization.yaml resources = %q, want every manifest in deploy/: %q", got, want)
	}
	if len(b.kustomization.Images) != 1 || b.kustomization.Images[0].Name != b.gatehouse.Image {
		t.Errorf("kustomization.yaml images should set the gatehouse container's image %q: %+v", b.gatehouse.Image, b.kustomization.Images)
	}
}

// The base names a released version of the image, the one
// `make image VERSION=...` builds and README.md says how to publish, never
// the moving "latest".
func TestImageNamesAVersion(t *testing.T) {
	b := loadBase(t)
	if len(b.kustomization.Images) != 1 {
		t.Fatalf("kustomization.yaml images: %+v", b.kustomization.Images)
	}
	img := b.kustomization.Images[0]
	if img.NewName != "ghcr.io/gatehouse-auth/gatehouse" || !regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(img.NewTag) {
		t.Errorf("the base maps the image to %s:%s; want ghcr.io/gatehouse-auth/gatehouse:vX.Y.Z", img.NewName, img.NewTag)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), img.NewName+":"+img.NewTag) || !strings.Contains(string(readme), "make image VERSION="+img.NewTag) {
		t.Errorf("deploy/README.md does not say how %s:%s is built (make image VERSION=%s)", img.NewName, img.NewTag, img.NewTag)
	}
	for _, dir := range manifestDirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if regexp.MustCompile(`(?m)(:latest\s*$|newTag:\s*latest)`).Match(data) {
				t.Errorf("%s names an image by the tag latest", f)
			}
		}
	}
}

func TestServiceTargetsGatehouseOnly(t *testing.T) {
	b := loadBase(t)
	pod := &b.deployment.Spec.Template.Spec
	listen := listenPort(t, "listen", b.flag("listen"))
	if listen != 8080 {
		t.Errorf("gatehouse --listen port is %d, want 8080", listen)
	}
	if len(b.service.Spec.Ports) == 0 {
		t.Fatal("the Service has no ports")
	}
	for _, sp := range b.service.Spec.Ports {
		c, cp := containerPort(pod, sp.TargetPort)
		switch {
		case cp == nil:
			t.Errorf("Service port %s: targetPort %s is no container port", sp.Name, sp.TargetPort.String())
		case c.Name != b.gatehouse.Name:
			t.Errorf("Service port %s targets container %s port %d: the Service must reach only Gatehouse", sp.Name, c.Name, cp.ContainerPort)
		case cp.ContainerPort != listen:
			t.Errorf("Service port %s targets gatehouse port %d, want the proxy's --listen port %d", sp.Name, cp.ContainerPort, listen)
		}
	}
	for k, v := range b.service.Spec.Selector {
		if b.deployment.Spec.Template.Labels[k] != v {
			t.Errorf("Service selector %s=%s does not match the pod's labels %v", k, v, b.deployment.Spec.Template.Labels)
		}
	}
	if len(b.service.Spec.Selector) == 0 {
		t.Error("the Service has no selector")
	}
	sel, err := metav1.LabelSelectorAsMap(b.deployment.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range sel {
		if b.deployment.Spec.Template.Labels[k] != v {
			t.Errorf("Deployment selector %s=%s does not match the pod template's labels", k, v)
		}
	}
}

func TestUpstreamIsTheAppOnLoopback(t *testing.T) {
	b := loadBase(t)
	u, err := url.Parse(b.args["upstream"])
	if err != nil || u.Scheme != "http" {
		t.Fatalf("--upstream=%q: want http://127.0.0.1:<app port>", b.args["upstream"])
	}
	if u.Hostname() != "127.0.0.1" {
		t.Errorf("--upstream host is %q, want 127.0.0.1: the app is in the same pod", u.Hostname())
	}
	var appPorts []string
	for _, p := range b.app.Ports {
		appPorts = append(appPorts, strconv.Itoa(int(p.ContainerPort)))
	}
	if len(appPorts) != 1 || u.Port() != appPorts[0] {
		t.Errorf("--upstream port is %q, want the app container's port %q", u.Port(), appPorts)
	}
	// The stand-in app is told its port on the command line: the declared
	// containerPort is only documentation, the app must really listen there.
	for i, a := range b.app.Args {
		port, ok := strings.CutPrefix(a, "--port=")
		if !ok && a == "--port" && i+1 < len(b.app.Args) {
			port, ok = b.app.Args[i+1], true
		}
		if ok && port != u.Port() {
			t.Errorf("the app container listens on --port %s, --upstream points at %s", port, u.Port())
		}
	}
}

func TestProbesUseTheAdminListener(t *testing.T) {
	b := loadBase(t)
	pod := &b.deployment.Spec.Template.Spec
	admin := b.flag("admin-listen")
	host, _, _ := net.SplitHostPort(admin)
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		t.Errorf("--admin-listen=%s: kubelet probes cannot reach a loopback address", admin)
	}
	adminPort := listenPort(t, "admin-listen", admin)
	for _, p := range []struct {
		kind, path string
		probe      *corev1.Probe
	}{
		{"liveness", "/healthz", b.gatehouse.LivenessProbe},
		{"readiness", "/readyz", b.gatehouse.ReadinessProbe},
	} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("gatehouse has no HTTP %s probe", p.kind)
			continue
		}
		g := p.probe.HTTPGet
		if g.Path != p.path {
			t.Errorf("%s probe path %q, want %q", p.kind, g.Path, p.path)
		}
		c, cp := containerPort(pod, g.Port)
		if cp == nil || c.Name != b.gatehouse.Name || cp.ContainerPort != adminPort {
			t.Errorf("%s probe port %s, want gatehouse's admin port %d", p.kind, g.Port.String(), adminPort)
		}
		if g.Scheme != "" && g.Scheme != corev1.URISchemeHTTP {
			t.Errorf("%s probe scheme %s: the admin listener is plain HTTP", p.kind, g.Scheme)
		}
	}
}

func TestOneWriterOnTheDatabase(t *testing.T) {
	b := loadBase(t)
	d := b.deployment.Spec
	if d.Replicas == nil || *d.Replicas != 1 {
		t.Errorf("replicas = %v, want 1: bbolt allows one process per file", d.Replicas)
	}
	if d.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("strategy %q, want Recreate: a rolling update would start a second pod on the same file", d.Strategy.Type)
	}
	db := b.flag("db")
	if !path.IsAbs(db) {
		t.Fatalf("--db=%q: want an absolute path on the volume", db)
	}
	vol := volumeAt(t, b, path.Dir(db))
	if vol == nil || vol.PersistentVolumeClaim == nil || vol.PersistentVolumeClaim.ClaimName != b.claim.Name {
		t.Errorf("the folder of --db=%s is not on the PersistentVolumeClaim %s", db, b.claim.Name)
	}
	if !slices.Equal(b.claim.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
		t.Errorf("PVC access modes %v, want [ReadWriteOnce]", b.claim.Spec.AccessModes)
	}
}

// volumeAt returns the volume mounted writable in the gatehouse container at
// dir or above it.
func volumeAt(t *testing.T, b base, dir string) *corev1.Volume {
	t.Helper()
	for _, m := range b.gatehouse.VolumeMounts {
		if m.ReadOnly || !(dir == m.MountPath || strings.HasPrefix(dir, strings.TrimSuffix(m.MountPath, "/")+"/")) {
			continue
		}
		for i, v := range b.deployment.Spec.Template.Spec.Volumes {
			if v.Name == m.Name {
				return &b.deployment.Spec.Template.Spec.Volumes[i]
			}
		}
	}
	return nil
}

func TestWritablePathsAreVolumes(t *testing.T) {
	b := loadBase(t)
	for _, flag := range []string{"db", "mail-dir"} {
		p := b.flag(flag)
		if !path.IsAbs(p) {
			t.Errorf("--%s=%q: a relative path lands on the read-only root filesystem", flag, p)
			continue
		}
		dir := p
		if flag == "db" {
			dir = path.Dir(p)
		}
		if volumeAt(t, b, dir) == nil {
			t.Errorf("--%s=%s is not on a writable volume, and the root filesystem is read-only", flag, p)
		}
	}
}

func TestRestrictedSecurityContext(t *testing.T) {
	b := loadBase(t)
	pod := b.deployment.Spec.Template.Spec
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Error("pod securityContext: want runAsNonRoot: true")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("automountServiceAccountToken: want false, neither container uses the API")
	}
	if pod.EnableServiceLinks == nil || *pod.EnableServiceLinks {
		t.Error("enableServiceLinks: want false, else a Service named gatehouse puts GATEHOUSE_* variables into the environment")
	}
	for _, c := range pod.Containers {
		sc := c.SecurityContext
		if sc == nil {
			t.Errorf("container %s has no securityContext", c.Name)
			continue
		}
		check := func(what string, ok bool) {
			if !ok {
				t.Errorf("container %s: want %s", c.Name, what)
			}
		}
		check("runAsNonRoot: true", sc.RunAsNonRoot != nil && *sc.RunAsNonRoot)
		check("runAsUser: 65532", sc.RunAsUser != nil && *sc.RunAsUser == 65532)
		check("readOnlyRootFilesystem: true", sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem)
		check("allowPrivilegeEscalation: false", sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation)
		check("privileged unset or false", sc.Privileged == nil || !*sc.Privileged)
		check("capabilities drop [ALL] and add none", sc.Capabilities != nil &&
			slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) && len(sc.Capabilities.Add) == 0)
		check("seccompProfile RuntimeDefault", sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault)
	}
}

func TestGraceCoversTheDrain(t *testing.T) {
	b := loadBase(t)
	drain := drainDeadline(t, b.args, b.flags)
	grace := b.deployment.Spec.Template.Spec.TerminationGracePeriodSeconds
	// One second beyond the drain to close the listeners and the database.
	if grace == nil {
		t.Fatalf("no terminationGracePeriodSeconds: the default 30s is too easy to change unnoticed")
	}
	if time.Duration(*grace)*time.Second < drain+time.Second {
		t.Errorf("terminationGracePeriodSeconds = %d, want at least the drain deadline %v plus 1s", *grace, drain)
	}
	if b.gatehouse.Lifecycle != nil && b.gatehouse.Lifecycle.PreStop != nil {
		t.Error("gatehouse has a preStop hook: its time comes out of the grace period; account for it here")
	}
}

// goMaxProcs is the GOMAXPROCS that Go (1.25 and later) picks under a CPU
// limit: the limit rounded up, but at least 2.
func goMaxProcs(cpu resource.Quantity) int {
	return max(2, int(math.Ceil(float64(cpu.MilliValue())/1000)))
}

func TestResourcesFitPasswordHashing(t *testing.T) {
	b := loadBase(t)
	for _, c := range b.deployment.Spec.Template.Spec.Containers {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[r]
			lim, hasLim := c.Resources.Limits[r]
			if !hasReq || !hasLim || req.IsZero() || lim.IsZero() {
				t.Errorf("container %s: want a %s request and limit", c.Name, r)
			} else if req.Cmp(lim) > 0 {
				t.Errorf("container %s: %s request %s exceeds the limit %s", c.Name, r, req.String(), lim.String())
			}
		}
	}
	// Gatehouse hashes at most GOMAXPROCS/2 passwords at once (at least
	// one), each with 19 MiB of argon2id memory that stays garbage until the
	// next collection: count twice that, on top of 64 MiB for the rest.
	limits := b.gatehouse.Resources.Limits
	slots := max(1, goMaxProcs(limits[corev1.ResourceCPU])/2)
	need := resource.MustParse(fmt.Sprintf("%dMi", 64+slots*2*19))
	mem := limits[corev1.ResourceMemory]
	if mem.Cmp(need) < 0 {
		t.Errorf("gatehouse memory limit %s is below %s for %d concurrent argon2id hashes", mem.String(), need.String(), slots)
	}
	for _, e := range b.gatehouse.Env {
		if e.Name != "GOMEMLIMIT" {
			continue
		}
		n, err := goMemLimit(e.Value)
		if err != nil {
			t.Errorf("GOMEMLIMIT=%q: %v", e.Value, err)
		} else if n >= mem.Value() {
			t.Errorf("GOMEMLIMIT=%s is not below the memory limit %s", e.Value, mem.String())
		}
	}
}

// goMemLimit parses a GOMEMLIMIT value (a number with an optional B, KiB,
// MiB, GiB or TiB suffix).
func goMemLimit(s string) (int64, error) {
	for i, unit := range []string{"TiB", "GiB", "MiB", "KiB", "B"} {
		if n, ok := strings.CutSuffix(s, unit); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			return v << (10 * (4 - i)), err
		}
	}
	return strconv.ParseInt(s, 10, 64)
}

func TestNetworkPolicyAdmitsOnlyGatehouse(t *testing.T) {
	b := loadBase(t)
	pod := &b.deployment.Spec.Template.Spec
	sel, err := metav1.LabelSelectorAsMap(&b.policy.Spec.PodSelector)
	if err != nil || len(sel) == 0 {
		t.Fatalf("NetworkPolicy podSelector %v: want the pod's labels", b.policy.Spec.PodSelector)
	}
	for k, v := range sel {
		if b.deployment.Spec.Template.Labels[k] != v {
			t.Errorf("NetworkPolicy selects %s=%s, which the pod does not carry", k, v)
		}
	}
	if !slices.Contains(b.policy.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
		t.Error("NetworkPolicy does not restrict Ingress")
	}
	listen := listenPort(t, "listen", b.flag("listen"))
	var admitsProxy bool
	for i, rule := range b.policy.Spec.Ingress {
		if len(rule.Ports) == 0 {
			t.Errorf("ingress rule %d admits every port, the app's included", i)
		}
		for _, p := range rule.Ports {
			if p.Port == nil {
				t.Errorf("ingress rule %d admits every port, the app's included", i)
				continue
			}
			c, cp := containerPort(pod, *p.Port)
			switch {
			case cp == nil:
				t.Errorf("ingress rule %d: port %s is no container port", i, p.Port.String())
			case c.Name != b.gatehouse.Name:
				t.Errorf("ingress rule %d admits container %s port %d: only Gatehouse may be reached from outside the pod", i, c.Name, cp.ContainerPort)
			case cp.ContainerPort == listen:
				admitsProxy = true
			}
		}
	}
	if !admitsProxy {
		t.Errorf("NetworkPolicy does not admit gatehouse's proxy port %d", listen)
	}
}

// checkContainerConfig checks the args and environment of a gatehouse
// container: every flag and every GATEHOUSE_* name exists, and every secret
// reference points at a key of the base's Secret.
func checkContainerConfig(t *testing.T, where string, c corev1.Container, flags map[string]flagInfo, secret *corev1.Secret) {
	t.Helper()
	checkArgs(t, where, c.Args, flags)
	seen := map[string]bool{}
	for _, e := range c.Env {
		if seen[e.Name] {
			t.Errorf("%s: environment variable %s is set twice", where, e.Name)
		}
		seen[e.Name] = true
		checkEnvName(t, where, e.Name, flags)
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		_, inData := secret.Data[ref.Key]
		_, inStringData := secret.StringData[ref.Key]
		if ref.Name != secret.Name || !inData && !inStringData {
			t.Errorf("%s: %s refers to Secret %s key %s, which %s does not hold", where, e.Name, ref.Name, ref.Key, secret.Name)
		}
	}
	if len(c.EnvFrom) > 0 {
		t.Errorf("%s: envFrom hides which variables are set; list them under env", where)
	}
}

func TestEveryFlagAndVariableExists(t *testing.T) {
	b := loadBase(t)
	checkContainerConfig(t, "deploy/deployment.yaml", *b.gatehouse, b.flags, b.secret)
	for _, name := range []string{"GATEHOUSE_SMTP_PASSWORD", "GATEHOUSE_GOOGLE_CLIENT_SECRET", "GATEHOUSE_GITHUB_CLIENT_SECRET"} {
		i := slices.IndexFunc(b.gatehouse.Env, func(e corev1.EnvVar) bool { return e.Name == name })
		if i < 0 || b.gatehouse.Env[i].ValueFrom == nil || b.gatehouse.Env[i].ValueFrom.SecretKeyRef == nil {
			t.Errorf("%s should come from the Secret (secretKeyRef)", name)
		}
	}
	for k := range b.secret.StringData {
		if !strings.Contains(b.secret.StringData[k], "REPLACE-ME") {
			t.Errorf("Secret key %s: the example value should be an obvious placeholder (REPLACE-ME)", k)
		}
	}

	// The overlay's patches name the same containers and must use real
	// flags and variables too.
	overlay := loadManifests(t, "../examples/kubernetes")
	var patched int
	for _, m := range overlay {
		d, ok := m.obj.(*appsv1.Deployment)
		if !ok {
			continue
		}
		if d.Name != b.deployment.Name {
			t.Errorf("%s patches Deployment %q, the base has %q", m.file, d.Name, b.deployment.Name)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name == b.gatehouse.Name {
				checkContainerConfig(t, m.file, c, b.flags, b.secret)
				patched++
			}
		}
	}
	if patched == 0 {
		t.Error("examples/kubernetes patches no gatehouse container; the test expected to check one")
	}
}

func TestOverlayRefersToTheBase(t *testing.T) {
	for _, m := range loadManifests(t, "../examples/kubernetes") {
		k, ok := m.obj.(*kustomization)
		if !ok {
			continue
		}
		dir := filepath.Dir(m.file)
		if !slices.Contains(k.Resources, "../../deploy") {
			t.Errorf("%s: resources %q should include the base ../../deploy", m.file, k.Resources)
		}
		for _, r := range k.Resources {
			if _, err := os.Stat(filepath.Join(dir, r)); err != nil {
				t.Errorf("%s: resource %s: %v", m.file, r, err)
			}
		}
		for _, p := range k.Patches {
			if _, err := os.Stat(filepath.Join(dir, p.Path)); err != nil {
				t.Errorf("%s: patch %s: %v", m.file, p.Path, err)
			}
		}
		return
	}
	t.Error("examples/kubernetes has no kustomization.yaml")
}
