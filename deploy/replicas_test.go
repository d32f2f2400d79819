//go:build integration && unix

package deploy

import (
	"os/exec"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TestReplicasVariant renders the replicas variant (the base with three
// replicas on PostgreSQL) from both places it is applied, deploy/replicas
// and examples/kubernetes-replicas, and checks what makes several replicas
// safe: no bbolt volume or claim left, a rolling update that never drops
// below the full count, a PodDisruptionBudget over the pods, and --db from
// a Secret as a postgres:// URL.
func TestReplicasVariant(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("SKIP: kubectl not installed; the replicas variant is not rendered")
	}
	for _, dir := range []string{"replicas", "../examples/kubernetes-replicas"} {
		t.Run(dir, func(t *testing.T) { checkReplicasVariant(t, kubectl, dir) })
	}
}

func checkReplicasVariant(t *testing.T, kubectl, dir string) {
	out, err := exec.Command(kubectl, "kustomize", dir).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v", dir, err)
	}
	var (
		deployment *appsv1.Deployment
		pdb        *policyv1.PodDisruptionBudget
		secrets    = map[string]*corev1.Secret{}
	)
	for i, doc := range splitDocuments(out) {
		obj, err := decodeStrict(doc)
		if err != nil {
			t.Fatalf("rendered document %d: %v", i+1, err)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			deployment = o
		case *policyv1.PodDisruptionBudget:
			pdb = o
		case *corev1.Secret:
			secrets[o.Name] = o
		case *corev1.PersistentVolumeClaim:
			t.Errorf("PersistentVolumeClaim %s rendered: the replicas keep no file", o.Name)
		}
	}
	if deployment == nil || pdb == nil {
		t.Fatalf("rendered Deployment %v, PodDisruptionBudget %v; want both", deployment != nil, pdb != nil)
	}
	d := deployment.Spec
	if d.Replicas == nil || *d.Replicas != 3 {
		t.Errorf("replicas %v, want 3", d.Replicas)
	}
	if d.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || d.Strategy.RollingUpdate == nil ||
		d.Strategy.RollingUpdate.MaxUnavailable == nil || d.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
		t.Errorf("strategy %+v, want RollingUpdate with maxUnavailable 0", d.Strategy)
	}
	for _, v := range d.Template.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			t.Errorf("volume %s still claims %s", v.Name, v.PersistentVolumeClaim.ClaimName)
		}
	}
	selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || !selector.Matches(labels.Set(d.Template.Labels)) {
		t.Errorf("the PodDisruptionBudget's selector %v does not select the pods %v", pdb.Spec.Selector, d.Template.Labels)
	}
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() < 1 || pdb.Spec.MinAvailable.IntValue() >= 3 {
		t.Errorf("minAvailable %v: want at least one pod kept and drains still possible", pdb.Spec.MinAvailable)
	}

	var gatehouse *corev1.Container
	for i, c := range d.Template.Spec.Containers {
		if c.Name == "gatehouse" {
			gatehouse = &d.Template.Spec.Containers[i]
		}
	}
	if gatehouse == nil {
		t.Fatal("no gatehouse container")
	}
	flags := gatehouseFlags(t)
	checkArgs(t, "replicas variant", gatehouse.Args, flags)
	for _, a := range gatehouse.Args {
		if strings.HasPrefix(a, "--db") {
			t.Errorf("arg %q: the database URL must come from the Secret", a)
		}
	}
	for _, m := range gatehouse.VolumeMounts {
		if m.MountPath == "/var/lib/gatehouse" {
			t.Errorf("the bbolt folder %s is still mounted", m.MountPath)
		}
	}
	found := false
	for _, e := range gatehouse.Env {
		checkEnvName(t, "replicas variant", e.Name, flags)
		if e.Name != "GATEHOUSE_DB" {
			continue
		}
		found = true
		ref := e.ValueFrom
		if ref == nil || ref.SecretKeyRef == nil {
			t.Fatal("GATEHOUSE_DB is not read from a Secret")
		}
		secret := secrets[ref.SecretKeyRef.Name]
		if secret == nil {
			t.Fatalf("GATEHOUSE_DB refers to Secret %q, not rendered", ref.SecretKeyRef.Name)
		}
		if url := secret.StringData[ref.SecretKeyRef.Key]; !strings.HasPrefix(url, "postgres://") {
			t.Errorf("Secret %s key %s = %q, want a postgres:// URL", secret.Name, ref.SecretKeyRef.Key, url)
		}
	}
	if !found {
		t.Error("no GATEHOUSE_DB in the gatehouse container's environment")
	}
}
