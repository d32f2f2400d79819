//go:build integration && unix

package deploy

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelmReadme: the chart's README names every example values file, every
// secrets entry with the flag it becomes, and every flag the chart keeps
// out of config because it sets it itself.
func TestHelmReadme(t *testing.T) {
	data, err := os.ReadFile(path.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	examples, _ := filepath.Glob(path.Join(chartDir, "examples", "*.yaml"))
	if len(examples) == 0 {
		t.Fatal("no example values files")
	}
	for _, f := range examples {
		if !strings.Contains(readme, "| `"+filepath.Base(f)+"` |") {
			t.Errorf("README.md's table of examples lacks %s", filepath.Base(f))
		}
	}
	secrets := readSchema(t)["properties"].(map[string]any)["secrets"].(map[string]any)["properties"].(map[string]any)
	for name := range secrets {
		if row := "| `secrets." + name + "` | `--" + name + "-file` |"; !strings.Contains(readme, row) {
			t.Errorf("README.md lacks the row %q", row)
		}
	}
	for _, flag := range chartSetFlags {
		if flag != "config" && !strings.Contains(readme, "`"+flag+"`") {
			t.Errorf("README.md does not say that the chart sets %s itself", flag)
		}
	}
}
