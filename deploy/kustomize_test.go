//go:build integration && unix

package deploy

import (
	"os/exec"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestKustomizeBuild renders the base and the laptop overlay with kustomize
// (as `kubectl apply -k` does), decodes the output strictly and runs the
// rendered Gatehouse container's configuration: the overlay's patches, its
// generated Secret (a hashed name, no keys) and the image mapping are
// checked as the cluster would see them. It needs kubectl; without it the
// manifests are still checked file by file by the tests above.
func TestKustomizeBuild(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed; the rendered output is not checked")
	}
	flags := gatehouseFlags(t)
	for _, tc := range []struct {
		dir, image, namespace string
	}{
		{".", "ghcr.io/gatehouse-auth/gatehouse:v2.0.0", ""},
		{"../examples/kubernetes", "gatehouse:dev", "gatehouse-demo"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			out, err := exec.Command(kubectl, "kustomize", tc.dir).Output()
			if err != nil {
				t.Fatalf("kubectl kustomize %s: %v", tc.dir, err)
			}
			var deployment *appsv1.Deployment
			var secrets []*corev1.Secret
			for i, doc := range splitDocuments(out) {
				obj, err := decodeStrict(doc)
				if err != nil {
					t.Errorf("rendered document %d: %v", i+1, err)
					continue
				}
				switch o := obj.(type) {
				case *appsv1.Deployment:
					deployment = o
				case *corev1.Secret:
					secrets = append(secrets, o)
				}
				if tc.namespace != "" {
					if ns := namespaceOf(obj); ns != tc.namespace && !isNamespace(obj) {
						t.Errorf("rendered document %d is in namespace %q, want %q", i+1, ns, tc.namespace)
					}
				}
			}
			if deployment == nil || len(secrets) != 1 {
				t.Fatalf("rendered %d Secrets and Deployment %v; want one of each", len(secrets), deployment != nil)
			}
			var gatehouse *corev1.Container
			for i, c := range deployment.Spec.Template.Spec.Containers {
				if c.Name == "gatehouse" {
					gatehouse = &deployment.Spec.Template.Spec.Containers[i]
				}
			}
			if gatehouse == nil {
				t.Fatal("the rendered Deployment has no gatehouse container")
			}
			if gatehouse.Image != tc.image {
				t.Errorf("rendered image %q, want %q", gatehouse.Image, tc.image)
			}
			where := "kustomize " + tc.dir
			checkArgs(t, where, gatehouse.Args, flags)
			for _, e := range gatehouse.Env {
				checkEnvName(t, where, e.Name, flags)
				if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil && ref.SecretKeyRef.Name != secrets[0].Name {
					t.Errorf("%s: %s refers to Secret %q, the rendered Secret is %q", where, e.Name, ref.SecretKeyRef.Name, secrets[0].Name)
				}
			}
			values, _, _ := parseArgs(gatehouse.Args, flags)
			runContainerConfig(t, *gatehouse, secrets[0], drainDeadline(t, values, flags))
		})
	}
}

// namespaceOf is the metadata.namespace of a decoded object.
func namespaceOf(obj any) string {
	if o, ok := obj.(interface{ GetNamespace() string }); ok {
		return o.GetNamespace()
	}
	return ""
}

func isNamespace(obj any) bool {
	_, ok := obj.(*corev1.Namespace)
	return ok
}
