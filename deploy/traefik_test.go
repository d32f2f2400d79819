//go:build integration

package deploy

import (
	"bytes"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// traefikDynamic is the part of Traefik's dynamic configuration (file
// provider) that examples/forward-auth/traefik.yml uses. Decoding is strict,
// so a misspelt key of these structs fails the test.
type traefikDynamic struct {
	HTTP struct {
		Routers map[string]struct {
			Rule        string   `json:"rule"`
			Service     string   `json:"service"`
			Priority    int      `json:"priority"`
			Middlewares []string `json:"middlewares"`
		} `json:"routers"`
		Middlewares map[string]struct {
			Headers *struct {
				CustomRequestHeaders map[string]string `json:"customRequestHeaders"`
			} `json:"headers"`
			ForwardAuth *struct {
				Address             string   `json:"address"`
				TrustForwardHeader  *bool    `json:"trustForwardHeader"`
				AuthResponseHeaders []string `json:"authResponseHeaders"`
			} `json:"forwardAuth"`
			IPAllowList *struct {
				SourceRange []string `json:"sourceRange"`
			} `json:"ipAllowList"`
		} `json:"middlewares"`
		Services map[string]struct {
			LoadBalancer struct {
				Servers []struct {
					URL string `json:"url"`
				} `json:"servers"`
			} `json:"loadBalancer"`
		} `json:"services"`
	} `json:"http"`
}

// identityHeaders are the headers a forward-auth answer hands to the app
// (CONTRACT "Forward-auth for a proxy you already run").
var identityHeaders = []string{"X-Forwarded-User", "X-Forwarded-Email", "X-Forwarded-Groups", "X-Gatehouse-Jwt-Assertion"}

// The Traefik example is not run against a real Traefik (no Debian
// package); this checks its wiring instead: the ForwardAuth middleware asks
// Gatehouse's /auth/check/forward-auth, lets Traefik set the X-Forwarded-*
// headers itself (a client's copies are not trusted), hands the identity
// headers to the app, and a client's own copies of them are removed first;
// the check endpoints are not reachable through Traefik; the command line
// in its comment is real gatehouse flags, listening where Traefik asks and
// trusting Traefik's address.
func TestTraefikExample(t *testing.T) {
	conf, raw := readTraefikExample(t)
	h, path := conf.HTTP, traefikExample

	// The app's router: strip the client's identity headers, then ask
	// Gatehouse.
	app, ok := h.Routers["app"]
	if !ok {
		t.Fatal("no router app")
	}
	var strip, auth string
	for _, name := range app.Middlewares {
		m := h.Middlewares[name]
		switch {
		case m.Headers != nil && strip == "" && auth == "":
			strip = name
		case m.ForwardAuth != nil:
			auth = name
		}
	}
	if auth == "" {
		t.Fatalf("router app's middlewares %q: none is a forwardAuth", app.Middlewares)
	}
	if strip == "" {
		t.Errorf("router app's middlewares %q: no headers middleware before %s removes the client's identity headers", app.Middlewares, auth)
	} else {
		for _, name := range identityHeaders {
			if v, ok := h.Middlewares[strip].Headers.CustomRequestHeaders[name]; !ok || v != "" {
				t.Errorf("middleware %s does not remove %s (an empty value does)", strip, name)
			}
		}
	}

	fa := h.Middlewares[auth].ForwardAuth
	addr, err := url.Parse(fa.Address)
	if err != nil {
		t.Fatal(err)
	}
	if addr.Path != "/auth/check/forward-auth" || addr.RawQuery != "" {
		t.Errorf("forwardAuth address %q: want the path /auth/check/forward-auth", fa.Address)
	}
	if fa.TrustForwardHeader == nil || *fa.TrustForwardHeader {
		t.Error("forwardAuth trustForwardHeader must be false: Traefik then sets X-Forwarded-* itself instead of passing a client's copies")
	}
	for _, name := range identityHeaders {
		if !slices.Contains(fa.AuthResponseHeaders, name) {
			t.Errorf("forwardAuth authResponseHeaders %q lack %s", fa.AuthResponseHeaders, name)
		}
	}

	// The router of Gatehouse's pages serves /auth/ but not /auth/check/.
	pages, checks := false, false
	for name, r := range h.Routers {
		if r.Service == "" {
			t.Errorf("router %s has no service", name)
		} else if _, ok := h.Services[r.Service]; !ok && !strings.HasSuffix(r.Service, "@internal") {
			t.Errorf("router %s: no service %s", name, r.Service)
		}
		if strings.Contains(r.Rule, "PathPrefix(`/auth/`)") && r.Service != "" && gatehouseService(h.Services[r.Service].LoadBalancer.Servers, addr.Host) {
			pages = true
		}
		if strings.Contains(r.Rule, "PathPrefix(`/auth/check/`)") && r.Priority > 0 {
			for _, m := range r.Middlewares {
				if al := h.Middlewares[m].IPAllowList; al != nil && slices.Equal(al.SourceRange, []string{"255.255.255.255/32"}) {
					checks = true
				}
			}
		}
	}
	if !pages {
		t.Errorf("no router sends PathPrefix(`/auth/`) to Gatehouse at %s", addr.Host)
	}
	if !checks {
		t.Error("no router with a priority keeps /auth/check/ from clients")
	}

	// The command line in the comment: real flags, Gatehouse listening
	// where forwardAuth asks, trusting the peer Traefik calls from.
	m := regexp.MustCompile(`(?s)#\s+gatehouse (.*?)\n[^#]`).FindSubmatch(raw)
	if m == nil {
		t.Fatalf("%s: no gatehouse command line in its comment", path)
	}
	line := strings.NewReplacer("\\\n", " ", "#", " ").Replace(string(m[1]))
	values := checkArgs(t, path, strings.Fields(line), gatehouseFlags(t))
	if values["listen"] != addr.Host {
		t.Errorf("gatehouse --listen %q, forwardAuth asks %q", values["listen"], addr.Host)
	}
	_, trusted, err := net.ParseCIDR(values["forward-auth-trusted"])
	host, _, _ := net.SplitHostPort(addr.Host)
	if err != nil || !trusted.Contains(net.ParseIP(host)) {
		t.Errorf("gatehouse --forward-auth-trusted %q does not hold Traefik's address beside Gatehouse (%s)", values["forward-auth-trusted"], host)
	}
}

func gatehouseService(servers []struct {
	URL string `json:"url"`
}, hostport string) bool {
	for _, s := range servers {
		if u, err := url.Parse(s.URL); err == nil && u.Host == hostport {
			return true
		}
	}
	return false
}

// traefikExample is the Traefik example's file.
var traefikExample = filepath.Join("..", "examples", "forward-auth", "traefik.yml")

// readTraefikExample reads the Traefik example, every field known, and
// returns it with its text.
func readTraefikExample(t *testing.T) (traefikDynamic, []byte) {
	t.Helper()
	path := traefikExample
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var conf traefikDynamic
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&conf); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return conf, raw
}
