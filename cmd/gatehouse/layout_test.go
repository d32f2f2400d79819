package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The package map: each package's doc comment says what it may import of
// this module, in the first sentence of its "Dependencies:" paragraph
// ("Dependencies: authflows → storage, proxy/web (…)." or "Dependencies:
// bolt imports storage and go.etcd.io/bbolt only."). That sentence must
// name exactly the module packages the package imports (its non-test
// files, as go list sees them): an import added without saying so fails
// here, and so does a sentence that names a package no longer imported.
// Commands (package main) only wire and are not held to a list.
func TestPackageImportsMatchDocComments(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages; the test is not looking at the module", len(pkgs))
	}
	for _, p := range pkgs {
		if p.Name == "main" {
			continue
		}
		rel := p.rel()
		doc := packageDoc(t, p)
		sentence, ok := dependencySentence(doc)
		if !ok {
			t.Errorf("%s: its doc comment has no \"Dependencies:\" paragraph saying what it may import", rel)
			continue
		}
		declared := namedPackages(sentence, pkgs, rel)
		var actual []string
		for _, imp := range p.Imports {
			if r, ok := strings.CutPrefix(imp, modulePath+"/"); ok {
				actual = append(actual, r)
			}
		}
		for _, imp := range actual {
			if !slices.Contains(declared, imp) {
				t.Errorf("%s imports %s, which the Dependencies sentence of its doc comment does not name: %q", rel, imp, sentence)
			}
		}
		for _, d := range declared {
			if !slices.Contains(actual, d) {
				t.Errorf("%s: the Dependencies sentence of its doc comment names %s, which it does not import: %q", rel, d, sentence)
			}
		}
	}
}

// The reading of a Dependencies sentence, on the forms the module uses.
func TestDependencySentence(t *testing.T) {
	pkgs := []listedPackage{{ImportPath: modulePath + "/storage"}, {ImportPath: modulePath + "/proxy"}, {ImportPath: modulePath + "/proxy/web"},
		{ImportPath: modulePath + "/authflows"}, {ImportPath: modulePath + "/authflows/audit"}}
	for _, tc := range []struct {
		doc  string
		self string
		want []string
	}{
		{"What it owns.\n\nDependencies: authflows → storage (records, proxy: no), proxy/web,\nauthflows/audit. The proxy never imports authflows.\n", "authflows",
			[]string{"authflows/audit", "proxy/web", "storage"}},
		{"Dependencies: storage imports only the standard library. Consumers (proxy, authflows) declare interfaces.", "storage", nil},
		{"Dependencies: bolt imports storage and go.etcd.io/bbolt only. No bbolt type leaves it.", "storage/bolt", []string{"storage"}},
		{"Dependencies: standard library only. proxy and authflows both import web.", "proxy/web", nil},
	} {
		sentence, ok := dependencySentence(tc.doc)
		if !ok {
			t.Errorf("%q: no Dependencies sentence found", tc.doc)
			continue
		}
		if got := namedPackages(sentence, pkgs, tc.self); !slices.Equal(got, tc.want) {
			t.Errorf("%q: named %q, want %q", sentence, got, tc.want)
		}
	}
	if _, ok := dependencySentence("Package x does things.\n"); ok {
		t.Error("a doc comment without Dependencies was read as having one")
	}
}

const modulePath = "github.com/gatehouse-auth/gatehouse"

type listedPackage struct {
	ImportPath string
	Name       string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	Imports    []string
}

// rel is the package's path inside the module ("." for the root).
func (p listedPackage) rel() string {
	if r, ok := strings.CutPrefix(p.ImportPath, modulePath+"/"); ok {
		return r
	}
	return "."
}

// listPackages is `go list -json ./...` run at the module's root.
func listPackages(t *testing.T) []listedPackage {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the packages: %v", err)
	}
	root, err := exec.Command(goTool, "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-json", "./...")
	cmd.Dir = strings.TrimSpace(string(root))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -json ./...: %v\n%s", err, stderr.String())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// packageDoc is the package's doc comment, from whichever of its files
// holds it.
func packageDoc(t *testing.T, p listedPackage) string {
	t.Helper()
	var doc strings.Builder
	fset := token.NewFileSet()
	for _, name := range slices.Concat(p.GoFiles, p.CgoFiles) {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if f.Doc != nil {
			doc.WriteString(f.Doc.Text())
			doc.WriteString("\n")
		}
	}
	return doc.String()
}

// dependencySentence is the first sentence of the doc's "Dependencies:"
// paragraph, on one line: up to the first period that ends a sentence
// outside parentheses.
func dependencySentence(doc string) (string, bool) {
	_, rest, ok := strings.Cut(doc, "Dependencies:")
	if !ok {
		return "", false
	}
	if para, _, ok := strings.Cut(rest, "\n\n"); ok {
		rest = para
	}
	rest = strings.Join(strings.Fields(rest), " ")
	depth := 0
	for i, r := range rest {
		switch {
		case r == '(':
			depth++
		case r == ')':
			depth = max(depth-1, 0)
		case r == '.' && depth == 0 && (i+1 == len(rest) || rest[i+1] == ' '):
			return rest[:i], true
		}
	}
	return rest, true
}

// pathToken is a word that may name a package: letters, digits and the
// characters of a path.
var pathToken = regexp.MustCompile(`[A-Za-z0-9_./-]+`)

// namedPackages are the module packages the sentence names, outside its
// parentheses (which explain, they do not list), other than self; sorted.
func namedPackages(sentence string, pkgs []listedPackage, self string) []string {
	var plain strings.Builder
	depth := 0
	for _, r := range sentence {
		switch {
		case r == '(':
			depth++
		case r == ')':
			depth = max(depth-1, 0)
		case depth == 0:
			plain.WriteRune(r)
		}
	}
	known := map[string]bool{}
	for _, p := range pkgs {
		known[p.rel()] = true
	}
	var named []string
	for _, word := range pathToken.FindAllString(plain.String(), -1) {
		word = strings.TrimRight(word, ".")
		if known[word] && word != self && !slices.Contains(named, word) {
			named = append(named, word)
		}
	}
	slices.Sort(named)
	return named
}
