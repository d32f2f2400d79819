//go:build integration

package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// headingAnchor is the anchor GitHub gives a Markdown heading: lower case,
// punctuation other than "-" and "_" dropped, spaces made "-".
func headingAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestHeadingAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"One replica, strategy Recreate":             "one-replica-strategy-recreate",
		"Reproduce: `make bench`":                    "reproduce-make-bench",
		"Forward-auth: Gatehouse behind nginx":       "forward-auth-gatehouse-behind-nginx",
		"What users do themselves: the account page": "what-users-do-themselves-the-account-page",
	} {
		if got := headingAnchor(heading); got != want {
			t.Errorf("headingAnchor(%q) = %q, want %q", heading, got, want)
		}
	}
}

// anchors returns the anchors of a Markdown file's headings (outside code
// blocks), with GitHub's -1, -2 … for repeated headings.
func anchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	count := map[string]int{}
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if in || !strings.HasPrefix(line, "#") {
			continue
		}
		a := headingAnchor(strings.TrimLeft(line, "#"))
		if n := count[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		count[a]++
	}
	return out
}

// Every relative link of the documents names a file or folder that exists,
// and a link to a heading (#…) names a heading that the target has: with
// the README split into the operator manual's chapters, a link that still
// points at an old section would otherwise send the reader nowhere.
func TestDocsLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	checked := 0
	for _, file := range documents(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Dir(file)
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
				continue // https:, mailto:
			}
			name, anchor, _ := strings.Cut(target, "#")
			resolved := file
			if name != "" {
				resolved = filepath.Join(dir, name)
				if _, err := os.Stat(resolved); err != nil {
					t.Errorf("%s links %s: %v", file, target, err)
					continue
				}
			}
			checked++
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(resolved, ".md") {
				if info, err := os.Stat(filepath.Join(resolved, "README.md")); err == nil && !info.IsDir() {
					resolved = filepath.Join(resolved, "README.md")
				} else {
					t.Errorf("%s links %s: an anchor into a file that is not Markdown", file, target)
					continue
				}
			}
			if !anchors(t, resolved)[anchor] {
				t.Errorf("%s links %s: %s has no heading #%s", file, target, resolved, anchor)
			}
		}
	}
	if checked < 40 {
		t.Fatalf("checked only %d links: the pattern reads the wrong text", checked)
	}
}
