package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every test behind the integration build tag in this package is one that
// `make test` selects with INTEGRATION_TESTS, so none is silently never run;
// and no test outside the tag is left to the tagged run alone.
func TestMakeTestRunsEveryIntegrationTest(t *testing.T) {
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^INTEGRATION_TESTS := (.+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile sets no INTEGRATION_TESTS")
	}
	selected := regexp.MustCompile(string(m[1]))
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	testFunc := regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
	tagged := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		integration := strings.HasPrefix(string(src), "//go:build integration")
		for _, name := range testFunc.FindAllSubmatch(src, -1) {
			switch n := string(name[1]); {
			case integration && !selected.MatchString(n):
				t.Errorf("%s: %s is behind the integration tag but INTEGRATION_TESTS %s does not select it", f, n, m[1])
			case integration:
				tagged++
			case !integration && selected.MatchString(n) && !strings.HasPrefix(string(src), "//go:build loadbench"):
				t.Errorf("%s: %s is not behind the integration tag but INTEGRATION_TESTS selects it", f, n)
			}
		}
	}
	if tagged == 0 {
		t.Error("no test behind the integration tag: INTEGRATION_TESTS is stale")
	}
}
