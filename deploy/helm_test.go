//go:build integration && unix

package deploy

import (
	"fmt"
	"net"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// defaultUpstream is the only value a user must give.
const defaultUpstream = "upstream: http://my-app.apps.svc.cluster.local:8080\n"

// helmValueSets are the value sets every chart check runs on: the defaults
// plus upstream, and each example values file in the chart's examples/
// folder (what the README tells users to copy), with the checks that
// belong to that set alone.
var helmValueSets = []helmValueSet{
	{"defaults", func(*testing.T) string { return defaultUpstream }, checkHelmDefaults},
	{"replicas-postgres", example("replicas-postgres.yaml"), checkHelmReplicas},
	{"ingress", example("ingress.yaml"), checkHelmIngress},
	{"servicemonitor", example("servicemonitor.yaml"), checkHelmServiceMonitor},
	{"secrets", example("secrets.yaml"), checkHelmSecrets},
	{"routes", example("routes.yaml"), checkHelmRoutes},
	{"sidecar", example("sidecar.yaml"), checkHelmSidecar},
}

type helmValueSet struct {
	name   string
	values func(t *testing.T) string
	check  func(t *testing.T, r release, args map[string]string)
}

func example(name string) func(t *testing.T) string {
	return func(t *testing.T) string { return exampleValues(t, name) }
}

// TestHelmValueSets renders each value set and checks what makes the
// release safe and working: restricted pod security, the Service, Ingress
// and NetworkPolicy leading only to the proxy port, the admin port open to
// the metrics pods alone, probes on the admin port, the configuration file
// mounted and passed with --config, secrets only as files from existing
// Secrets, one replica on bbolt, and the set's own promises. Where the
// gatehouse binary built from this tree reads a configuration file, every
// argument and every key of the file is checked against it, and `gatehouse
// config check` validates the rendered configuration as the pod would run it.
func TestHelmValueSets(t *testing.T) {
	for _, set := range helmValueSets {
		t.Run(set.name, func(t *testing.T) {
			r := mustRender(t, set.values(t))
			checkRelease(t, r)
			args, _, _ := parseArgs(r.gatehouse.Args, nil)
			set.check(t, r, args)
			checkReleaseAgainstBinary(t, r)
		})
	}
}

// checkRelease holds the checks every value set must pass.
func checkRelease(t *testing.T, r release) {
	t.Helper()
	checkHelmPodSecurity(t, r)
	checkHelmSelectors(t, r)
	checkHelmExposure(t, r)
	checkHelmNetworkPolicy(t, r)
	checkHelmProbes(t, r)
	checkHelmConfigMounted(t, r)
	checkHelmSecretsAreFiles(t, r)
	checkHelmStorage(t, r)
	checkHelmResources(t, r)
	args, _, rest := parseArgs(r.gatehouse.Args, nil)
	if len(rest) > 0 {
		t.Errorf("gatehouse arguments that are not flags: %q", rest)
	}
	grace := r.deployment.Spec.Template.Spec.TerminationGracePeriodSeconds
	drain, err := time.ParseDuration(args["shutdown-timeout"])
	if err != nil || grace == nil || time.Duration(*grace)*time.Second < drain+time.Second {
		t.Errorf("terminationGracePeriodSeconds %v, --shutdown-timeout %q: the grace period must cover the drain plus 1s", grace, args["shutdown-timeout"])
	}
	if len(r.gatehouse.Command) > 0 {
		t.Errorf("the gatehouse container overrides the image's entrypoint with %q", r.gatehouse.Command)
	}
}

// checkHelmPodSecurity: the restricted Pod Security Standard for the pod and
// every container, no service account token, no service links.
func checkHelmPodSecurity(t *testing.T, r release) {
	pod := r.deployment.Spec.Template.Spec
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Error("pod securityContext: want runAsNonRoot: true")
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("pod securityContext: want seccompProfile RuntimeDefault")
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		t.Error("the pod shares a host namespace")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("automountServiceAccountToken: want false, Gatehouse does not use the API")
	}
	if pod.EnableServiceLinks == nil || *pod.EnableServiceLinks {
		t.Error("enableServiceLinks: want false, else a Service named gatehouse puts GATEHOUSE_* variables into the environment")
	}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			t.Errorf("volume %s is a hostPath", v.Name)
		}
	}
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		sc := c.SecurityContext
		if sc == nil {
			t.Errorf("container %s has no securityContext", c.Name)
			continue
		}
		for _, w := range []struct {
			what string
			ok   bool
		}{
			{"runAsNonRoot: true", sc.RunAsNonRoot != nil && *sc.RunAsNonRoot},
			{"runAsUser: 65532", sc.RunAsUser != nil && *sc.RunAsUser == 65532},
			{"readOnlyRootFilesystem: true", sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem},
			{"allowPrivilegeEscalation: false", sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation},
			{"privileged unset or false", sc.Privileged == nil || !*sc.Privileged},
			{"capabilities drop [ALL] and add none", sc.Capabilities != nil &&
				slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) && len(sc.Capabilities.Add) == 0},
			{"seccompProfile RuntimeDefault", sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault},
		} {
			if !w.ok {
				t.Errorf("container %s: want %s", c.Name, w.what)
			}
		}
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				t.Errorf("container %s port %d has hostPort %d", c.Name, p.ContainerPort, p.HostPort)
			}
		}
	}
}

// selects reports whether selector selects the pods of the release.
func selects(t *testing.T, r release, selector *metav1.LabelSelector) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		t.Fatalf("selector %v: %v", selector, err)
	}
	return !s.Empty() && s.Matches(labels.Set(r.deployment.Spec.Template.Labels))
}

func checkHelmSelectors(t *testing.T, r release) {
	if !selects(t, r, r.deployment.Spec.Selector) {
		t.Errorf("the Deployment's selector %v does not select its own pods %v", r.deployment.Spec.Selector, r.deployment.Spec.Template.Labels)
	}
	for _, svc := range []*corev1.Service{r.service, r.metrics} {
		if svc != nil && !selects(t, r, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}) {
			t.Errorf("Service %s selects %v, not the pods", svc.Name, svc.Spec.Selector)
		}
	}
	if r.pdb != nil && !selects(t, r, r.pdb.Spec.Selector) {
		t.Errorf("the PodDisruptionBudget's selector %v does not select the pods", r.pdb.Spec.Selector)
	}
}

// proxyPort and adminPort are the gatehouse container's ports named by
// --listen and --admin-listen.
func proxyPort(t *testing.T, r release) int32 {
	t.Helper()
	args, _, _ := parseArgs(r.gatehouse.Args, nil)
	return listenPort(t, "listen", args["listen"])
}

func adminPort(t *testing.T, r release) int32 {
	t.Helper()
	args, _, _ := parseArgs(r.gatehouse.Args, nil)
	host, _, _ := net.SplitHostPort(args["admin-listen"])
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		t.Errorf("--admin-listen=%s: kubelet probes cannot reach a loopback address", args["admin-listen"])
	}
	return listenPort(t, "admin-listen", args["admin-listen"])
}

// checkHelmExposure: the Service and the Ingress lead to Gatehouse's proxy
// port and nowhere else; the metrics Service, when there is one, to the
// admin port alone.
func checkHelmExposure(t *testing.T, r release) {
	pod := &r.deployment.Spec.Template.Spec
	for _, s := range []struct {
		svc  *corev1.Service
		port int32
	}{{r.service, proxyPort(t, r)}, {r.metrics, adminPort(t, r)}} {
		if s.svc == nil {
			continue
		}
		if s.svc.Spec.Type != "" && s.svc.Spec.Type != corev1.ServiceTypeClusterIP {
			t.Errorf("Service %s is of type %s: only a ClusterIP Service stays behind the NetworkPolicy's peers", s.svc.Name, s.svc.Spec.Type)
		}
		if len(s.svc.Spec.Ports) == 0 {
			t.Errorf("Service %s has no ports", s.svc.Name)
		}
		for _, sp := range s.svc.Spec.Ports {
			c, cp := containerPort(pod, sp.TargetPort)
			if cp == nil || c.Name != "gatehouse" || cp.ContainerPort != s.port {
				t.Errorf("Service %s port %s targets %s, want gatehouse's port %d only", s.svc.Name, sp.Name, sp.TargetPort.String(), s.port)
			}
		}
	}
	if r.ingress == nil {
		return
	}
	var backends []networkingv1.IngressBackend
	if r.ingress.Spec.DefaultBackend != nil {
		backends = append(backends, *r.ingress.Spec.DefaultBackend)
	}
	for _, rule := range r.ingress.Spec.Rules {
		if rule.HTTP == nil {
			t.Error("an Ingress rule has no http paths")
			continue
		}
		for _, p := range rule.HTTP.Paths {
			backends = append(backends, p.Backend)
		}
	}
	for _, b := range backends {
		if b.Service == nil || b.Service.Name != r.service.Name {
			t.Errorf("Ingress backend %+v: want the Service %s", b, r.service.Name)
			continue
		}
		if i := slices.IndexFunc(r.service.Spec.Ports, func(p corev1.ServicePort) bool {
			return b.Service.Port.Name != "" && p.Name == b.Service.Port.Name || b.Service.Port.Number != 0 && p.Port == b.Service.Port.Number
		}); i < 0 {
			t.Errorf("Ingress backend port %+v is no port of the Service %s", b.Service.Port, r.service.Name)
		}
	}
}

// checkHelmNetworkPolicy: the policy over the pods admits other pods only to
// Gatehouse's ports, the proxy port to named peers (the ingress controller,
// whose X-Forwarded-For config.trusted-proxies believes), and the admin port
// only to pods named by their labels. A policy over other pods (the
// upstream's) admits nothing but Gatehouse.
func checkHelmNetworkPolicy(t *testing.T, r release) {
	pod := &r.deployment.Spec.Template.Spec
	proxy, admin := proxyPort(t, r), adminPort(t, r)
	var own *networkingv1.NetworkPolicy
	for _, p := range r.policies {
		if selects(t, r, &p.Spec.PodSelector) {
			setOnce(t, &own, p)
			continue
		}
		// A policy over the upstream's pods, never all pods of the namespace.
		if sel, err := metav1.LabelSelectorAsMap(&p.Spec.PodSelector); err != nil || len(sel) == 0 {
			t.Errorf("NetworkPolicy %s selects every pod of the namespace (%v)", p.Name, p.Spec.PodSelector)
			continue
		}
		if !slices.Equal(p.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(p.Spec.Ingress) != 1 {
			t.Errorf("NetworkPolicy %s over other pods: want one ingress rule admitting Gatehouse", p.Name)
			continue
		}
		for _, peer := range p.Spec.Ingress[0].From {
			if peer.NamespaceSelector != nil || peer.IPBlock != nil || peer.PodSelector == nil || !selects(t, r, peer.PodSelector) {
				t.Errorf("NetworkPolicy %s admits %+v to the upstream's pods: want Gatehouse's pods alone", p.Name, peer)
			}
		}
		if len(p.Spec.Ingress[0].From) == 0 {
			t.Errorf("NetworkPolicy %s admits every pod to the upstream", p.Name)
		}
	}
	if own == nil {
		t.Error("no NetworkPolicy selects Gatehouse's pods")
		return
	}
	if !slices.Contains(own.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
		t.Error("the NetworkPolicy does not restrict Ingress")
	}
	var admitsProxy, admitsAdmin bool
	for i, rule := range own.Spec.Ingress {
		if len(rule.Ports) == 0 {
			t.Errorf("ingress rule %d admits every port", i)
		}
		for _, p := range rule.Ports {
			if p.Port == nil {
				t.Errorf("ingress rule %d admits every port", i)
				continue
			}
			c, cp := containerPort(pod, *p.Port)
			switch {
			case cp == nil:
				t.Errorf("ingress rule %d: port %s is no container port", i, p.Port.String())
			case c.Name != "gatehouse":
				t.Errorf("ingress rule %d admits container %s port %d: only Gatehouse may be reached from outside the pod", i, c.Name, cp.ContainerPort)
			case cp.ContainerPort == proxy:
				admitsProxy = true
				if admitsAny(rule.From) {
					t.Errorf("ingress rule %d admits everyone to the proxy port, whose X-Forwarded-For config.trusted-proxies believes", i)
				}
			case cp.ContainerPort == admin:
				admitsAdmin = true
				for j, peer := range rule.From {
					sel, err := metav1.LabelSelectorAsMap(peer.PodSelector)
					if peer.IPBlock != nil || peer.PodSelector == nil || err != nil || len(sel) == 0 {
						t.Errorf("ingress rule %d peer %d admits the admin port without naming the pods (%+v)", i, j, peer)
					}
				}
				if len(rule.From) == 0 {
					t.Errorf("ingress rule %d admits the admin port %d from every pod", i, admin)
				}
			default:
				t.Errorf("ingress rule %d admits gatehouse port %d, neither the proxy's nor the admin's", i, cp.ContainerPort)
			}
		}
	}
	if !admitsProxy || !admitsAdmin {
		t.Errorf("the NetworkPolicy admits the proxy port: %v, the admin port (Prometheus): %v; want both", admitsProxy, admitsAdmin)
	}
}

// checkHelmProbes: liveness on /healthz and readiness on /readyz, both on
// the admin port (what `gatehouse` serves there).
func checkHelmProbes(t *testing.T, r release) {
	pod := &r.deployment.Spec.Template.Spec
	admin := adminPort(t, r)
	for _, p := range []struct {
		kind, path string
		probe      *corev1.Probe
	}{
		{"liveness", "/healthz", r.gatehouse.LivenessProbe},
		{"readiness", "/readyz", r.gatehouse.ReadinessProbe},
	} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("gatehouse has no HTTP %s probe", p.kind)
			continue
		}
		g := p.probe.HTTPGet
		c, cp := containerPort(pod, g.Port)
		if g.Path != p.path || cp == nil || c.Name != "gatehouse" || cp.ContainerPort != admin {
			t.Errorf("%s probe %s on port %s, want %s on gatehouse's admin port %d", p.kind, g.Path, g.Port.String(), p.path, admin)
		}
		if g.Scheme != "" && g.Scheme != corev1.URISchemeHTTP {
			t.Errorf("%s probe scheme %s: the admin listener is plain HTTP", p.kind, g.Scheme)
		}
	}
}

// mountOf returns the gatehouse container's mount holding file and its
// volume, or nils.
func mountOf(r release, file string) (*corev1.VolumeMount, *corev1.Volume) {
	for i, m := range r.gatehouse.VolumeMounts {
		if !strings.HasPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/") {
			continue
		}
		for j, v := range r.deployment.Spec.Template.Spec.Volumes {
			if v.Name == m.Name {
				return &r.gatehouse.VolumeMounts[i], &r.deployment.Spec.Template.Spec.Volumes[j]
			}
		}
	}
	return nil, nil
}

// helmConfig is the rendered configuration file, decoded.
func helmConfig(t *testing.T, r release) map[string]any {
	t.Helper()
	args, _, _ := parseArgs(r.gatehouse.Args, nil)
	data, ok := r.configMap.Data[path.Base(args["config"])]
	if !ok {
		t.Fatalf("the ConfigMap has no %s: %v", path.Base(args["config"]), r.configMap.Data)
	}
	var config map[string]any
	if err := yaml.UnmarshalStrict([]byte(data), &config); err != nil {
		t.Fatalf("the configuration file: %v\n%s", err, data)
	}
	return config
}

// checkHelmConfigMounted: --config names a file of the ConfigMap, mounted
// as a folder (a subPath mount would never see a change).
func checkHelmConfigMounted(t *testing.T, r release) {
	args, _, _ := parseArgs(r.gatehouse.Args, nil)
	file, ok := args["config"]
	if !ok {
		t.Fatal("gatehouse is not given --config")
	}
	m, v := mountOf(r, file)
	switch {
	case m == nil:
		t.Errorf("--config=%s is on no volume", file)
	case v.ConfigMap == nil || v.ConfigMap.Name != r.configMap.Name:
		t.Errorf("--config=%s is on volume %s, not the ConfigMap %s", file, v.Name, r.configMap.Name)
	case m.SubPath != "":
		t.Errorf("the configuration is mounted with subPath %s: a changed ConfigMap would never reach the pod", m.SubPath)
	case !m.ReadOnly:
		t.Errorf("the configuration volume is mounted writable")
	case path.Dir(file) != m.MountPath:
		t.Errorf("--config=%s is not directly in the mount %s", file, m.MountPath)
	}
	config := helmConfig(t, r)
	if config["upstream"] == nil {
		t.Error("the configuration file sets no upstream")
	}
	if ef, ok := config["allow-emails-file"].(string); ok {
		if m, v := mountOf(r, ef); m == nil || v.ConfigMap == nil || r.configMap.Data[path.Base(ef)] == "" {
			t.Errorf("allow-emails-file %s is not a file of the ConfigMap", ef)
		}
	}
}

// secretFlags are the flags whose values are secrets: those that have a
// -file twin (the contract's rule for secrets), and --db, whose
// postgres:// URL holds a password.
var secretFlags = []string{"db", "smtp-password", "google-client-secret", "github-client-secret", "oidc-client-secret"}

// checkHelmSecretsAreFiles: no secret in the ConfigMap or the environment;
// every --X-file names a key of an existing Secret mounted read-only; the
// chart creates no Secret (mustRender refuses any).
func checkHelmSecretsAreFiles(t *testing.T, r release) {
	config := helmConfig(t, r)
	for _, f := range secretFlags {
		if _, ok := config[f]; ok {
			t.Errorf("the ConfigMap sets %s, a secret", f)
		}
	}
	for name, data := range r.configMap.Data {
		if strings.Contains(data, "postgres://") || strings.Contains(data, "postgresql://") {
			t.Errorf("ConfigMap key %s holds a database URL", name)
		}
	}
	for _, c := range r.deployment.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.ValueFrom != nil {
				t.Errorf("container %s: %s comes from %+v: secrets are files, never variables", c.Name, e.Name, e.ValueFrom)
			}
			if flag, ok := envFlag(e.Name); ok && slices.Contains(secretFlags, flag) {
				t.Errorf("container %s: %s sets a secret in the environment", c.Name, e.Name)
			}
		}
		if len(c.EnvFrom) > 0 {
			t.Errorf("container %s: envFrom", c.Name)
		}
	}
	args, order, _ := parseArgs(r.gatehouse.Args, nil)
	for _, f := range secretFlags {
		if _, ok := args[f]; ok && f != "db" {
			t.Errorf("--%s is given on the command line", f)
		}
	}
	used := map[string]bool{}
	for _, name := range order {
		secret, ok := strings.CutSuffix(name, "-file")
		if !ok || !slices.Contains(secretFlags, secret) {
			continue
		}
		file := args[name]
		m, v := mountOf(r, file)
		if m == nil || v.Projected == nil || !m.ReadOnly {
			t.Errorf("--%s=%s is not on a read-only projected volume of Secrets", name, file)
			continue
		}
		var found bool
		for _, src := range v.Projected.Sources {
			if src.Secret == nil {
				t.Errorf("volume %s projects %+v, not a Secret", v.Name, src)
				continue
			}
			for _, item := range src.Secret.Items {
				if path.Join(m.MountPath, item.Path) == file {
					found = true
					used[file] = true
				}
			}
		}
		if !found {
			t.Errorf("--%s=%s: no Secret key is projected there", name, file)
		}
	}
	for _, v := range r.deployment.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			t.Errorf("volume %s mounts the whole Secret %s", v.Name, v.Secret.SecretName)
		}
		if v.Projected == nil {
			continue
		}
		if mode := v.Projected.DefaultMode; mode == nil || *mode&0o037 != 0 {
			t.Errorf("volume %s: file mode %s, want no write or other-user bits (0440)", v.Name, fileMode(mode))
		}
		for _, src := range v.Projected.Sources {
			for _, item := range src.Secret.Items {
				var m *corev1.VolumeMount
				for i := range r.gatehouse.VolumeMounts {
					if r.gatehouse.VolumeMounts[i].Name == v.Name {
						m = &r.gatehouse.VolumeMounts[i]
					}
				}
				if m == nil || !used[path.Join(m.MountPath, item.Path)] {
					t.Errorf("Secret %s key %s is mounted, but no --*-file reads it", src.Secret.Name, item.Key)
				}
			}
		}
	}
}

func fileMode(mode *int32) string {
	if mode == nil {
		return "unset (0644)"
	}
	return fmt.Sprintf("%#o", *mode)
}

// checkHelmStorage: bbolt means one replica, Recreate and a kept
// ReadWriteOnce claim under --db; PostgreSQL means --db-file, no claim, a
// rolling update that never drops below the count, and a
// PodDisruptionBudget when there are several replicas.
func checkHelmStorage(t *testing.T, r release) {
	args, _, _ := parseArgs(r.gatehouse.Args, nil)
	d := r.deployment.Spec
	replicas := int32(1)
	if d.Replicas != nil {
		replicas = *d.Replicas
	}
	_, bbolt := args["db"]
	_, postgres := args["db-file"]
	if bbolt == postgres {
		t.Fatalf("want exactly one of --db (bbolt) and --db-file (PostgreSQL): %q", r.gatehouse.Args)
	}
	for _, dir := range []string{args["mail-dir"], path.Dir(args["db"])} {
		if dir == "." {
			continue
		}
		m, v := mountOf(r, dir+"/x")
		if m == nil || m.ReadOnly || v.EmptyDir == nil && v.PersistentVolumeClaim == nil {
			t.Errorf("%s is not on a writable volume, and the root filesystem is read-only", dir)
		}
	}
	if bbolt {
		if replicas != 1 {
			t.Errorf("replicas %d on bbolt: one process per file", replicas)
		}
		if d.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Errorf("strategy %q on bbolt, want Recreate: a rolling update starts a second pod on the same file", d.Strategy.Type)
		}
		_, v := mountOf(r, args["db"])
		if r.claim == nil || v == nil || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != r.claim.Name {
			t.Fatalf("--db=%s is not on the release's PersistentVolumeClaim", args["db"])
		}
		if !slices.Equal(r.claim.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
			t.Errorf("claim access modes %v, want [ReadWriteOnce]", r.claim.Spec.AccessModes)
		}
		if r.claim.Annotations["helm.sh/resource-policy"] != "keep" {
			t.Error("the claim is deleted with the release, and every user with it: want helm.sh/resource-policy: keep")
		}
		return
	}
	if r.claim != nil {
		t.Errorf("PersistentVolumeClaim %s rendered for PostgreSQL", r.claim.Name)
	}
	if d.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || d.Strategy.RollingUpdate == nil ||
		d.Strategy.RollingUpdate.MaxUnavailable == nil || d.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
		t.Errorf("strategy %+v on PostgreSQL, want RollingUpdate with maxUnavailable 0", d.Strategy)
	}
	switch {
	case replicas > 1 && r.pdb == nil:
		t.Errorf("%d replicas and no PodDisruptionBudget", replicas)
	case replicas == 1 && r.pdb != nil:
		t.Error("a PodDisruptionBudget over one replica blocks every node drain")
	case r.pdb != nil:
		mu := r.pdb.Spec.MaxUnavailable
		if mu == nil || r.pdb.Spec.MinAvailable != nil || mu.Type != intstr.Int || mu.IntVal < 1 || mu.IntVal >= replicas {
			t.Errorf("PodDisruptionBudget %+v: want maxUnavailable between 1 and %d", r.pdb.Spec, replicas-1)
		}
	}
}

// checkHelmResources: requests and limits on every container, and room
// for password hashing under the memory limit (see TestResourcesFitPasswordHashing).
func checkHelmResources(t *testing.T, r release) {
	for _, c := range r.deployment.Spec.Template.Spec.Containers {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[name]
			lim, hasLim := c.Resources.Limits[name]
			if !hasReq || !hasLim || req.IsZero() || lim.IsZero() || req.Cmp(lim) > 0 {
				t.Errorf("container %s: want a %s request at most its limit", c.Name, name)
			}
		}
	}
	limits := r.gatehouse.Resources.Limits
	slots := max(1, goMaxProcs(limits[corev1.ResourceCPU])/2)
	need := resource.MustParse(fmt.Sprintf("%dMi", 64+slots*2*19))
	mem := limits[corev1.ResourceMemory]
	if mem.Cmp(need) < 0 {
		t.Errorf("gatehouse memory limit %s is below %s for %d concurrent argon2id hashes", mem.String(), need.String(), slots)
	}
	for _, e := range r.gatehouse.Env {
		if e.Name == "GOMEMLIMIT" {
			if n, err := goMemLimit(e.Value); err != nil || n >= mem.Value() {
				t.Errorf("GOMEMLIMIT=%s (%v) is not below the memory limit %s", e.Value, err, mem.String())
			}
		}
	}
}
