package authflows

import (
	"net/http"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/provider"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// The per-IP limit on flow starts, per provider: the contract's floor, 60
// requests per client IP per minute, passes. A client IP can thus add a
// burst of 60 pending flows and then one a second; each expires after
// oauthFlowTTL and the sweep deletes it.
const (
	flowStartBurst  = 60
	flowStartPeriod = time.Minute
)

// providerLink is what pages need to show a provider button.
type providerLink struct {
	Name  string // path segment: /auth/login/{Name}
	Title string // "Google"
}

// providerLinks lists the configured providers in page order, for the
// sign-in page's buttons (.Providers with .Name and .Title).
func (h *core) providerLinks() []providerLink {
	var out []providerLink
	for _, k := range provider.Kinds() {
		if p, ok := h.providers[k.Name]; ok {
			out = append(out, providerLink{Name: p.Name, Title: p.Title})
		}
	}
	return out
}

var (
	errUnknownProvider       = web.NewProblem(http.StatusNotFound, "unknown_provider", "Unknown sign-in provider")
	errProviderNotConfigured = web.NewProblem(http.StatusNotFound, "provider_not_configured", "This sign-in provider is not enabled")
)

// configuredProvider returns the provider named in the path, or answers 404:
// unknown_provider for a name Gatehouse does not support,
// provider_not_configured for a supported one without credentials.
func (h *oauthFlow) configuredProvider(w http.ResponseWriter, r *http.Request) (*provider.Provider, bool) {
	name := r.PathValue("provider")
	if _, ok := provider.KindOf(name); !ok {
		web.WriteProblem(w, r, errUnknownProvider)
		return nil, false
	}
	p, ok := h.providers[name]
	if !ok {
		web.WriteProblem(w, r, errProviderNotConfigured)
		return nil, false
	}
	return p, true
}

// providerTitle names a provider for pages and messages, also one that is
// no longer configured.
func (h *core) providerTitle(name string) string {
	if p, ok := h.providers[name]; ok {
		return p.Title
	}
	if k, ok := provider.KindOf(name); ok {
		return k.Title
	}
	return name
}
