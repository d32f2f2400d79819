//go:build integration && unix

package deploy

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// chartDir is the Helm chart, relative to this package.
const chartDir = "helm/gatehouse"

// The release every test renders: a name and a namespace like a user's.
const (
	releaseName      = "gatehouse"
	releaseNamespace = "apps"
)

// serviceMonitor is the part of the Prometheus Operator's ServiceMonitor
// (monitoring.coreos.com/v1) that the chart uses, field names as in the
// operator's CRD. Decoding is strict like decodeStrict's, so a field this
// struct lacks fails the test: add it here, from the CRD, when the chart
// starts using it.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path,omitempty"`
			Interval string `json:"interval,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// decodeRendered decodes one rendered document strictly: the chart's kinds
// that deploy/ has no manifest of (Ingress, ServiceMonitor) here, the rest
// with decodeStrict.
func decodeRendered(doc []byte) (any, error) {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return nil, err
	}
	var obj any
	switch meta.APIVersion + "/" + meta.Kind {
	case "networking.k8s.io/v1/Ingress":
		obj = new(networkingv1.Ingress)
	case "monitoring.coreos.com/v1/ServiceMonitor":
		obj = new(serviceMonitor)
	default:
		return decodeStrict(doc)
	}
	data, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, err
	}
	strict, err := sigsjson.UnmarshalStrict(data, obj)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		return nil, errors.Join(strict...)
	}
	return obj, nil
}

// renderChart renders the chart as `helm template` would, with values
// (YAML) over the chart's values.yaml: schema validation, the templates in
// strict mode (a reference to a value that does not exist fails), fail and
// required included. It returns each rendered file's text by template
// name, NOTES.txt among them.
func renderChart(values string) (map[string]string, error) {
	chart, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", chartDir, err)
	}
	vals, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	top, err := chartutil.ToRenderValues(chart, vals, chartutil.ReleaseOptions{
		Name: releaseName, Namespace: releaseNamespace, IsInstall: true, Revision: 1,
	}, nil)
	if err != nil {
		return nil, err
	}
	return engine.Engine{Strict: true}.Render(chart, top)
}

// release is one rendered release, decoded.
type release struct {
	files      map[string]string // rendered text by template name
	deployment *appsv1.Deployment
	service    *corev1.Service // the proxy's
	metrics    *corev1.Service // the admin port's, with the ServiceMonitor
	configMap  *corev1.ConfigMap
	claim      *corev1.PersistentVolumeClaim
	policies   []*networkingv1.NetworkPolicy
	pdb        *policyv1.PodDisruptionBudget
	ingress    *networkingv1.Ingress
	monitor    *serviceMonitor
	gatehouse  *corev1.Container
	app        *corev1.Container // the sidecar form's app, else nil
}

// mustRender renders values and decodes every document strictly; a render
// error or an object the test does not expect fails the test.
func mustRender(t *testing.T, values string) release {
	t.Helper()
	files, err := renderChart(values)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	r := release{files: files}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if path.Ext(name) != ".yaml" {
			continue
		}
		for i, doc := range splitDocuments([]byte(files[name])) {
			obj, err := decodeRendered(doc)
			if err != nil {
				t.Fatalf("%s, document %d: %v\n%s", name, i+1, err, doc)
			}
			if ns := namespaceOf(obj); ns != "" {
				t.Errorf("%s sets namespace %q: Helm puts the release's objects in the release's namespace", name, ns)
			}
			switch o := obj.(type) {
			case *appsv1.Deployment:
				setOnce(t, &r.deployment, o)
			case *corev1.Service:
				if strings.HasSuffix(o.Name, "-metrics") {
					setOnce(t, &r.metrics, o)
				} else {
					setOnce(t, &r.service, o)
				}
			case *corev1.ConfigMap:
				setOnce(t, &r.configMap, o)
			case *corev1.PersistentVolumeClaim:
				setOnce(t, &r.claim, o)
			case *networkingv1.NetworkPolicy:
				r.policies = append(r.policies, o)
			case *policyv1.PodDisruptionBudget:
				setOnce(t, &r.pdb, o)
			case *networkingv1.Ingress:
				setOnce(t, &r.ingress, o)
			case *serviceMonitor:
				setOnce(t, &r.monitor, o)
			default:
				t.Fatalf("%s renders a %T, which the chart tests do not check", name, obj)
			}
		}
	}
	if r.deployment == nil || r.service == nil || r.configMap == nil {
		t.Fatalf("want a Deployment, a Service and a ConfigMap; rendered %v", slices.Sorted(maps.Keys(files)))
	}
	pod := &r.deployment.Spec.Template.Spec
	for i := range pod.Containers {
		switch pod.Containers[i].Name {
		case "gatehouse":
			r.gatehouse = &pod.Containers[i]
		case "app":
			r.app = &pod.Containers[i]
		default:
			t.Errorf("unexpected container %q", pod.Containers[i].Name)
		}
	}
	if r.gatehouse == nil {
		t.Fatal("no gatehouse container")
	}
	return r
}

func setOnce[T any](t *testing.T, dst **T, v *T) {
	t.Helper()
	if *dst != nil {
		t.Fatalf("two %T rendered", v)
	}
	*dst = v
}

// exampleValues is the text of one of the chart's example values files.
func exampleValues(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(path.Join(chartDir, "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
