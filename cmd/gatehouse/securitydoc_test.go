package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// ruleID is how the code cites a security rule: two capitals and a number
// (PX5, SS8, OA10); ES256 and RS256 have three digits and do not match.
var ruleID = regexp.MustCompile(`\b[A-Z]{2}[0-9]{1,2}\b`)

// Every rule id cited anywhere in the repository is defined in SECURITY.md,
// exactly once (a line "- ID ..."), so that the merged branches leave no
// id undefined or defined twice.
func TestSecurityRulesDefinedOnce(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "SECURITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]int{}
	definition := regexp.MustCompile(`^- ([A-Z]{2}[0-9]{1,2})\b`)
	for line := range strings.SplitSeq(string(doc), "\n") {
		if m := definition.FindStringSubmatch(line); m != nil {
			defined[m[1]]++
		}
	}
	for id, n := range defined {
		if n > 1 {
			t.Errorf("SECURITY.md defines %s %d times", id, n)
		}
	}
	if len(defined) < 10 {
		t.Fatalf("SECURITY.md defines only %d rules: the definition pattern reads the wrong lines", len(defined))
	}

	text := map[string]bool{".go": true, ".md": true, ".yaml": true, ".yml": true, ".sh": true,
		".html": true, ".tmpl": true, ".sql": true, ".py": true, ".service": true, ".txt": true}
	cited := map[string][]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if path == filepath.Join(root, "SECURITY.md") || !text[filepath.Ext(name)] && name != "Makefile" && name != "Dockerfile" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, id := range ruleID.FindAllString(string(data), -1) {
			if !slices.Contains(cited[id], path) {
				cited[id] = append(cited[id], path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cited) < 40 {
		t.Fatalf("found only %d cited rule ids: the walk reads the wrong files", len(cited))
	}
	for id, files := range cited {
		if defined[id] == 0 {
			t.Errorf("rule %s is cited (%s) but not defined in SECURITY.md", id, strings.Join(files, ", "))
		}
	}
}
