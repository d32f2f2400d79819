//go:build integration

package deploy

import (
	networkingv1 "k8s.io/api/networking/v1"
	"net/netip"
	"strings"
	"testing"
)

// The base trusts X-Forwarded-For (PX2) and the URL-rebuilding headers (RH1)
// from --trusted-proxies, which deployment.yaml says are "where your ingress
// controller's pods live". A peer is trusted by its address alone, so the
// trust is only as narrow as the set of pods that can reach the proxy port:
// when the NetworkPolicy admits every source to that port, no trusted range
// may be wider than one address, or every pod in the range (and, behind a
// LoadBalancer Service, every client, whose connections arrive SNATed from
// the nodes' addresses) picks its own client IP for the per-IP throttles and
// sends X-Forwarded-Prefix, Forwarded, X-Original-Host, … straight to the
// app.
func TestTrustedProxiesNarrowerThanWhoReachesTheProxy(t *testing.T) {
	b := loadBase(t)
	pod := &b.deployment.Spec.Template.Spec
	listen := listenPort(t, "listen", b.flag("listen"))

	var trusted string
	for _, e := range b.gatehouse.Env {
		if e.Name == "GATEHOUSE_TRUSTED_PROXIES" {
			trusted = e.Value
		}
	}
	if v, ok := b.args["trusted-proxies"]; ok {
		trusted = v
	}
	if strings.TrimSpace(trusted) == "" {
		return // nobody's forwarded headers are believed
	}

	admitsEveryone := false
	for _, rule := range b.policy.Spec.Ingress {
		for _, p := range rule.Ports {
			if p.Port == nil {
				continue
			}
			if _, cp := containerPort(pod, *p.Port); cp != nil && cp.ContainerPort == listen && admitsAny(rule.From) {
				admitsEveryone = true
			}
		}
	}
	if !admitsEveryone {
		return // only the named peers (the ingress controller) reach the proxy
	}
	for _, raw := range strings.Split(trusted, ",") {
		prefix, err := netip.ParsePrefix(strings.TrimSpace(raw))
		if err != nil {
			if _, err := netip.ParseAddr(strings.TrimSpace(raw)); err == nil {
				continue // one address
			}
			t.Fatalf("GATEHOUSE_TRUSTED_PROXIES entry %q: %v", raw, err)
		}
		if prefix.Bits() < prefix.Addr().BitLen() {
			t.Errorf("GATEHOUSE_TRUSTED_PROXIES trusts all of %s, while the NetworkPolicy admits every source to the proxy port %d: "+
				"any pod there (and every client of a LoadBalancer Service, SNATed from a node) sets its own client IP for the per-IP limits (PX2) "+
				"and sends URL-rebuilding headers to the app (RH1); restrict the proxy port's ingress rule to the ingress controller's pods, or ship no trusted range",
				prefix, listen)
		}
	}
}

// admitsAny reports whether peers admit every pod or address: no peer at all
// (every source), a namespace selector that selects every namespace with no
// pod selector, or an address block wider than one address.
func admitsAny(peers []networkingv1.NetworkPolicyPeer) bool {
	if len(peers) == 0 {
		return true
	}
	for _, p := range peers {
		if p.NamespaceSelector != nil && len(p.NamespaceSelector.MatchLabels) == 0 && len(p.NamespaceSelector.MatchExpressions) == 0 && p.PodSelector == nil {
			return true
		}
		if p.IPBlock != nil {
			if prefix, err := netip.ParsePrefix(p.IPBlock.CIDR); err != nil || prefix.Bits() < prefix.Addr().BitLen() {
				return true
			}
		}
	}
	return false
}
