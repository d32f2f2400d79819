//go:build integration && unix

package deploy

import (
	"encoding/json"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
)

// TestHelmRefusals: values that would give a broken or unsafe release fail
// the render, with a message naming the value to change; a secret put where
// it does not belong is refused without being repeated.
func TestHelmRefusals(t *testing.T) {
	cases := []struct {
		name, values string
		want         []string // each in the error
	}{
		{"no upstream", "baseURL: https://app.example.com\n", []string{"upstream"}},
		{"empty upstream", "upstream: \"\"\n", []string{"upstream"}},
		{"upstream without a scheme", "upstream: my-app:8080\n", []string{"upstream"}},
		{"two replicas on bbolt", defaultUpstream + "replicaCount: 2\n", []string{"replicaCount", "secrets.db.secretName"}},
		{"replicas not a number", defaultUpstream + "replicaCount: two\n", []string{"replicaCount"}},
		{"unknown value", defaultUpstream + "replicas: 2\n", []string{"replicas"}},
		{"unknown nested value", defaultUpstream + "persistence:\n  sise: 2Gi\n", []string{"sise"}},
		{"unknown setting in config", defaultUpstream + "config:\n  smtp-adress: smtp.example.com:587\n", []string{"smtp-adress"}},
		{"setting of the wrong type", defaultUpstream + "config:\n  allow-email-domain: example.com\n", []string{"allow-email-domain"}},
		{"secret in config", defaultUpstream + "config:\n  smtp-password: hunter2-in-a-configmap\n", []string{"smtp-password"}},
		{"database URL in config", defaultUpstream + "config:\n  db: postgres://gatehouse:hunter2-in-a-configmap@db/gatehouse\n", []string{"db"}},
		{"pod wiring in config", defaultUpstream + "config:\n  listen: \":9999\"\n", []string{"listen"}},
		{"upstream twice", defaultUpstream + "config:\n  upstream: http://other\n", []string{"upstream"}},
		{"unknown route key", defaultUpstream + "config:\n  routes:\n    - path: /x\n      alow: public\n", []string{"alow"}},
		{"route outcome", defaultUpstream + "config:\n  routes:\n    - path: /x\n      allow: maybe\n", []string{"allow"}},
		{"route path without /", defaultUpstream + "config:\n  routes:\n    - path: static\n", []string{"path"}},
		{"route group without prefix", defaultUpstream + "config:\n  routes:\n    - path: /x\n      groups: [admins]\n", []string{"groups"}},
		{"secret without key", defaultUpstream + "secrets:\n  smtp-password:\n    secretName: s\n    key: \"\"\n", []string{"key"}},
		{"unknown secret", defaultUpstream + "secrets:\n  smtp-pasword:\n    secretName: s\n    key: k\n", []string{"smtp-pasword"}},
		{"trusted proxies without the NetworkPolicy", defaultUpstream + "networkPolicy:\n  enabled: false\n", []string{"config.trusted-proxies", "networkPolicy.enabled"}},
		{"metrics open to every pod", defaultUpstream + "networkPolicy:\n  metricsPodLabels: null\n", []string{"metricsPodLabels"}},
		{"sidecar on another upstream", "upstream: http://my-app:8080\napp:\n  image: traefik/whoami:v1.11.0\n", []string{"upstream", "app.port", "http://127.0.0.1:3000"}},
		{"sidecar with an upstream policy", "upstream: http://127.0.0.1:3000\napp:\n  image: traefik/whoami:v1.11.0\nnetworkPolicy:\n  upstreamPodLabels:\n    app: x\n", []string{"networkPolicy.upstreamPodLabels"}},
		{"TLS without a host", defaultUpstream + "ingress:\n  enabled: true\n  tlsSecretName: tls\n", []string{"ingress.host"}},
		{"GOMEMLIMIT not a size", defaultUpstream + "goMemLimit: 200M\n", []string{"goMemLimit"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := renderChart(c.values)
			if err == nil {
				t.Fatalf("rendered without error:\n%s", c.values)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not name %q: %v", w, err)
				}
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error repeats the secret: %v", err)
			}
			t.Logf("refused as expected: %v", err)
		})
	}
}

// TestHelmAcceptsWhatTheRefusalsRefuse renders the near neighbours of the
// refusals above, so that a refusal is not a chart that refuses everything.
func TestHelmAcceptsWhatTheRefusalsRefuse(t *testing.T) {
	for _, values := range []string{
		defaultUpstream + "replicaCount: 2\nsecrets:\n  db:\n    secretName: gatehouse-database\n    key: url\n",
		defaultUpstream + "networkPolicy:\n  enabled: false\nconfig:\n  trusted-proxies: []\n",
		defaultUpstream + "config:\n  smtp-addr: smtp.example.com:587\n  allow-email-domain: [example.com]\n  routes:\n    - path: =/x\n      groups: [oidc:admins]\n",
		"upstream: http://127.0.0.1:8000/\napp:\n  image: traefik/whoami:v1.11.0\n  port: 8000\n",
		defaultUpstream + "ingress:\n  enabled: true\n",
		defaultUpstream + "config:\n  trusted-proxies: null\n",
	} {
		if _, err := renderChart(values); err != nil {
			t.Errorf("refused: %v\n%s", err, values)
		}
	}
}

// TestHelmSchemaClosed walks values.schema.json: every object schema says
// additionalProperties false, or gives the schema of the values of a map
// whose keys the user chooses (labels, annotations). Helm then refuses a
// misspelt value instead of ignoring it.
func TestHelmSchemaClosed(t *testing.T) {
	schema := readSchema(t)
	var walk func(where string, s map[string]any)
	walk = func(where string, s map[string]any) {
		isObject := s["type"] == "object" || s["properties"] != nil
		switch ap := s["additionalProperties"].(type) {
		case bool:
			if ap {
				t.Errorf("%s: additionalProperties true", where)
			}
		case map[string]any:
			if ap["type"] != "string" {
				t.Errorf("%s: the values of a map must be typed (string), not %v", where, ap)
			}
			if s["properties"] != nil {
				t.Errorf("%s: both properties and a map of any key", where)
			}
		case nil:
			if isObject {
				t.Errorf("%s: an object without additionalProperties: false", where)
			}
		}
		if props, ok := s["properties"].(map[string]any); ok {
			for _, name := range slices.Sorted(maps.Keys(props)) {
				walk(where+"."+name, props[name].(map[string]any))
			}
		}
		if items, ok := s["items"].(map[string]any); ok {
			walk(where+"[]", items)
		}
	}
	walk("values", schema)
}

// TestHelmExamplesRender: every example values file renders, and is one of
// the value sets TestHelmValueSets checks in depth.
func TestHelmExamplesRender(t *testing.T) {
	files, err := os.ReadDir(path.Join(chartDir, "examples"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name())
		if _, err := renderChart(exampleValues(t, f.Name())); err != nil {
			t.Errorf("examples/%s: %v", f.Name(), err)
		}
	}
	for _, set := range helmValueSets {
		if set.name != "defaults" && !slices.Contains(names, set.name+".yaml") {
			t.Errorf("value set %s has no examples/%s.yaml", set.name, set.name)
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(helmValueSets, func(s helmValueSet) bool { return s.name+".yaml" == n }) {
			t.Errorf("examples/%s is not among the value sets TestHelmValueSets checks", n)
		}
	}
}

// readSchema decodes values.schema.json.
func readSchema(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	return schema
}
