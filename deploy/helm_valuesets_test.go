//go:build integration && unix

package deploy

import (
	"net/url"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The checks of each value set of TestHelmValueSets, beyond checkRelease.
// args are the gatehouse container's flags.

func checkHelmDefaults(t *testing.T, r release, args map[string]string) {
	if r.ingress != nil || r.monitor != nil || r.metrics != nil || r.pdb != nil || r.app != nil {
		t.Errorf("by default: Ingress %v, ServiceMonitor %v, metrics Service %v, PodDisruptionBudget %v, app container %v; want none",
			r.ingress != nil, r.monitor != nil, r.metrics != nil, r.pdb != nil, r.app != nil)
	}
	if len(r.policies) != 1 {
		t.Errorf("%d NetworkPolicies, want the one over Gatehouse's pods", len(r.policies))
	}
	if r.claim == nil || r.claim.Spec.Resources.Requests.Storage().String() != "1Gi" {
		t.Errorf("want a 1Gi claim for bbolt: %+v", r.claim)
	}
	config := helmConfig(t, r)
	if _, ok := config["base-url"]; ok {
		t.Errorf("base-url %v without baseURL or an Ingress host: want Gatehouse's default (http://localhost:8080, what a port-forward serves)", config["base-url"])
	}
	if config["upstream"] != "http://my-app.apps.svc.cluster.local:8080" {
		t.Errorf("upstream in the file %v, want the value given", config["upstream"])
	}
	if !strings.Contains(r.files["gatehouse/templates/NOTES.txt"], "port-forward service/"+r.service.Name+" 8080:80") {
		t.Errorf("NOTES.txt does not show the port-forward that matches the default base URL:\n%s", r.files["gatehouse/templates/NOTES.txt"])
	}
}

func checkHelmReplicas(t *testing.T, r release, args map[string]string) {
	if r.deployment.Spec.Replicas == nil || *r.deployment.Spec.Replicas != 3 {
		t.Errorf("replicas %v, want 3", r.deployment.Spec.Replicas)
	}
	if r.pdb == nil {
		t.Fatal("no PodDisruptionBudget over three replicas")
	}
	if args["db-file"] != "/etc/gatehouse/secrets/db" {
		t.Errorf("--db-file=%q, want the Secret's key mounted at /etc/gatehouse/secrets/db", args["db-file"])
	}
	if src := projectedSecret(r, "gatehouse-database"); src == nil || len(src.Items) != 1 || src.Items[0].Key != "url" || src.Items[0].Path != "db" {
		t.Errorf("the Secret gatehouse-database key url is not projected as db: %+v", src)
	}
	for _, v := range r.deployment.Spec.Template.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			t.Errorf("volume %s claims %s: the replicas keep no file", v.Name, v.PersistentVolumeClaim.ClaimName)
		}
	}
	if !strings.Contains(r.files["gatehouse/templates/NOTES.txt"], "--db-file /etc/gatehouse/secrets/db") {
		t.Error("NOTES.txt's users add does not name the database of the replicas")
	}
}

func checkHelmIngress(t *testing.T, r release, args map[string]string) {
	in := r.ingress
	if in == nil {
		t.Fatal("no Ingress")
	}
	if in.Spec.IngressClassName == nil || *in.Spec.IngressClassName != "nginx" {
		t.Errorf("ingressClassName %v, want nginx", in.Spec.IngressClassName)
	}
	if len(in.Spec.Rules) != 1 || in.Spec.Rules[0].Host != "app.example.com" {
		t.Errorf("rules %+v, want one for app.example.com", in.Spec.Rules)
	}
	if len(in.Spec.TLS) != 1 || in.Spec.TLS[0].SecretName != "app-example-com-tls" || !slices.Equal(in.Spec.TLS[0].Hosts, []string{"app.example.com"}) {
		t.Errorf("tls %+v, want app-example-com-tls for app.example.com", in.Spec.TLS)
	}
	if in.Annotations["cert-manager.io/cluster-issuer"] != "letsencrypt" {
		t.Errorf("annotations %v", in.Annotations)
	}
	if got := helmConfig(t, r)["base-url"]; got != "https://app.example.com" {
		t.Errorf("base-url %v, want https://app.example.com from the Ingress host and its TLS Secret", got)
	}
	// The proxy port admits the controller's pods in its namespace only.
	var peers []string
	for _, p := range r.policies {
		for _, rule := range p.Spec.Ingress {
			for _, peer := range rule.From {
				if peer.NamespaceSelector != nil && peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == "ingress-nginx" {
					peers = append(peers, metav1.FormatLabelSelector(peer.PodSelector))
				}
			}
		}
	}
	if !slices.Equal(peers, []string{"app.kubernetes.io/name=ingress-nginx"}) {
		t.Errorf("peers from the ingress-nginx namespace: %q, want its controller's pods", peers)
	}
	// The upstream's pods admit only Gatehouse.
	var upstream int
	for _, p := range r.policies {
		sel, _ := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
		if sel.Matches(labels.Set{"app.kubernetes.io/name": "my-app"}) {
			upstream++
		}
	}
	if upstream != 1 {
		t.Errorf("%d NetworkPolicies over the upstream's pods (app.kubernetes.io/name=my-app), want 1", upstream)
	}
}

func checkHelmServiceMonitor(t *testing.T, r release, args map[string]string) {
	if r.monitor == nil || r.metrics == nil {
		t.Fatalf("ServiceMonitor %v, metrics Service %v: want both", r.monitor != nil, r.metrics != nil)
	}
	sel, err := metav1.LabelSelectorAsSelector(&r.monitor.Spec.Selector)
	if err != nil || sel.Empty() {
		t.Fatalf("ServiceMonitor selector %v: %v", r.monitor.Spec.Selector, err)
	}
	if !sel.Matches(labels.Set(r.metrics.Labels)) {
		t.Errorf("the ServiceMonitor does not select the metrics Service (%v)", r.metrics.Labels)
	}
	if sel.Matches(labels.Set(r.service.Labels)) {
		t.Errorf("the ServiceMonitor also selects the proxy's Service, which has no admin port")
	}
	if len(r.monitor.Spec.Endpoints) != 1 {
		t.Fatalf("endpoints %+v, want one", r.monitor.Spec.Endpoints)
	}
	ep := r.monitor.Spec.Endpoints[0]
	if len(r.metrics.Spec.Ports) != 1 || ep.Port != r.metrics.Spec.Ports[0].Name || ep.Path != "/metrics" || ep.Interval != "30s" {
		t.Errorf("endpoint %+v, want /metrics every 30s on the metrics Service's port %+v", ep, r.metrics.Spec.Ports)
	}
	if r.monitor.Labels["release"] != "kube-prometheus-stack" {
		t.Errorf("ServiceMonitor labels %v lack release: kube-prometheus-stack, which Prometheus selects by", r.monitor.Labels)
	}
	// Prometheus in the monitoring namespace may reach the admin port.
	admin := adminPort(t, r)
	var ok bool
	for _, p := range r.policies {
		for _, rule := range p.Spec.Ingress {
			for _, port := range rule.Ports {
				if _, cp := containerPort(&r.deployment.Spec.Template.Spec, *port.Port); cp == nil || cp.ContainerPort != admin {
					continue
				}
				for _, peer := range rule.From {
					ok = ok || peer.NamespaceSelector != nil && peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == "monitoring" &&
						peer.PodSelector != nil && peer.PodSelector.MatchLabels["app.kubernetes.io/name"] == "prometheus"
				}
			}
		}
	}
	if !ok {
		t.Error("the NetworkPolicy does not admit Prometheus pods of the monitoring namespace to the admin port")
	}
}

func checkHelmSecrets(t *testing.T, r release, args map[string]string) {
	config := helmConfig(t, r)
	for key, want := range map[string]string{
		"google-client-id": "1234567890-abc.apps.googleusercontent.com",
		"github-client-id": "Iv1.0123456789abcdef",
		"smtp-addr":        "smtp.example.com:587",
		"base-url":         "https://app.example.com",
	} {
		if config[key] != want {
			t.Errorf("config %s = %v, want %s", key, config[key], want)
		}
	}
	src := projectedSecret(r, "gatehouse-secrets")
	if src == nil {
		t.Fatal("the Secret gatehouse-secrets is not projected")
	}
	for _, flag := range []string{"google-client-secret", "github-client-secret", "smtp-password"} {
		file := args[flag+"-file"]
		if file != "/etc/gatehouse/secrets/"+flag {
			t.Errorf("--%s-file=%q, want /etc/gatehouse/secrets/%s", flag, file, flag)
		}
		i := slices.IndexFunc(src.Items, func(k corev1.KeyToPath) bool { return k.Path == path.Base(file) })
		if i < 0 || src.Items[i].Key != flag {
			t.Errorf("%s: no key %s of gatehouse-secrets projected there: %+v", file, flag, src.Items)
		}
	}
	if _, ok := args["oidc-client-secret-file"]; ok {
		t.Error("--oidc-client-secret-file given while secrets.oidc-client-secret is empty")
	}
}

func checkHelmRoutes(t *testing.T, r release, args map[string]string) {
	config := helmConfig(t, r)
	routes, _ := config["routes"].([]any)
	want := []map[string]any{
		{"path": "/static/", "allow": "public"},
		{"path": "=/healthz", "allow": "public"},
		{"path": "/internal/", "allow": "deny"},
		{"path": "/admin/", "methods": []any{"GET", "POST"}, "groups": []any{"github:example/ops"}, "max-age": "15m"},
	}
	if len(routes) != len(want) {
		t.Fatalf("routes %v, want %v", routes, want)
	}
	for i := range want {
		if !reflect.DeepEqual(routes[i], map[string]any(want[i])) {
			t.Errorf("route %d: %v, want %v", i, routes[i], want[i])
		}
	}
	if !reflect.DeepEqual(config["allow-email-domain"], []any{"example.com"}) || !reflect.DeepEqual(config["public-path"], []any{"/favicon.ico"}) {
		t.Errorf("allow-email-domain %v, public-path %v", config["allow-email-domain"], config["public-path"])
	}
	ef, _ := config["allow-emails-file"].(string)
	if got := r.configMap.Data[path.Base(ef)]; ef == "" || got != "contractor@partner.example\n" {
		t.Errorf("allow-emails-file %q holds %q, want the one allowed address", ef, got)
	}
}

func checkHelmSidecar(t *testing.T, r release, args map[string]string) {
	if r.app == nil {
		t.Fatal("no app container beside Gatehouse")
	}
	if r.app.Image != "traefik/whoami:v1.11.0" || !slices.Equal(r.app.Args, []string{"--port=3000"}) {
		t.Errorf("app container %s %q", r.app.Image, r.app.Args)
	}
	u, err := url.Parse(helmConfig(t, r)["upstream"].(string))
	if err != nil || u.Hostname() != "127.0.0.1" {
		t.Fatalf("upstream %v: want the app over the pod's loopback", u)
	}
	if len(r.app.Ports) != 1 || strconv.Itoa(int(r.app.Ports[0].ContainerPort)) != u.Port() {
		t.Errorf("upstream port %s, app ports %+v", u.Port(), r.app.Ports)
	}
	// checkRelease already holds the Service and the NetworkPolicy to
	// Gatehouse's ports: the app's is reachable only from inside the pod.
}

// projectedSecret is the projection of the named Secret, or nil.
func projectedSecret(r release, name string) *corev1.SecretProjection {
	for _, v := range r.deployment.Spec.Template.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.Secret != nil && src.Secret.Name == name {
				return src.Secret
			}
		}
	}
	return nil
}
