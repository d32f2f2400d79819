//go:build integration

package deploy

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The admin listener (/metrics among others) is not open to the whole
// cluster: every ingress rule that admits the admin port names its peers,
// each by a non-empty pod label selector (Prometheus), and the Service does
// not publish it.
func TestAdminPortOnlyForPrometheus(t *testing.T) {
	b := loadBase(t)
	pod := &b.deployment.Spec.Template.Spec
	admin := listenPort(t, "admin-listen", b.flag("admin-listen"))
	var admitted bool
	for i, rule := range b.policy.Spec.Ingress {
		for _, p := range rule.Ports {
			if p.Port == nil {
				continue
			}
			if _, cp := containerPort(pod, *p.Port); cp == nil || cp.ContainerPort != admin {
				continue
			}
			admitted = true
			if len(rule.From) == 0 {
				t.Errorf("ingress rule %d admits the admin port %d from every pod of the cluster", i, admin)
			}
			for j, peer := range rule.From {
				sel, err := metav1.LabelSelectorAsMap(peer.PodSelector)
				if peer.IPBlock != nil || peer.PodSelector == nil || err != nil || len(sel) == 0 {
					t.Errorf("ingress rule %d peer %d: admits the admin port without naming the pods (%+v)", i, j, peer)
				}
			}
		}
	}
	if !admitted {
		t.Error("the admin port is admitted by no rule: Prometheus cannot scrape /metrics")
	}
	for _, p := range b.service.Spec.Ports {
		if _, cp := containerPort(pod, p.TargetPort); cp != nil && cp.ContainerPort == admin {
			t.Errorf("the Service publishes the admin port %d", admin)
		}
	}
}
