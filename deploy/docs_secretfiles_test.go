//go:build integration

package deploy

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// A document that tells users to put a secret in a file has them create it
// private, never write it first and chmod it after: `echo SECRET > FILE`
// creates FILE under the shell's umask (0644 on most systems), so any local
// user can open it before the `chmod 600` that follows (and keeps the open
// descriptor after it). Such a file is created under `umask 077`, or with
// `install -m 0600`, as the systemd example does.
func TestDocsCreateSecretFilesPrivate(t *testing.T) {
	files := documents(t)
	redirect := regexp.MustCompile(`(?:^|[^>2&])>\s*(/\S+)`)
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var block []string
		in := false
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				if in {
					checkSecretFileBlock(t, file, block, redirect)
				}
				in, block = !in, nil
				continue
			}
			if in {
				block = append(block, line)
			}
		}
	}
}

func checkSecretFileBlock(t *testing.T, file string, block []string, redirect *regexp.Regexp) {
	t.Helper()
	umask := false
	for i, line := range block {
		if regexp.MustCompile(`\bumask\s+0?077\b`).MatchString(line) {
			umask = true
		}
		m := redirect.FindStringSubmatch(line)
		if m == nil || umask {
			continue
		}
		target := m[1]
		for _, later := range block[i+1:] {
			if regexp.MustCompile(`\bchmod\s+0?600\s+` + regexp.QuoteMeta(target) + `\b`).MatchString(later) {
				t.Errorf("%s: %q writes a secret to %s before `%s` makes it private: it is readable by every local user in between (create it under umask 077 or with install -m 0600)",
					file, strings.TrimSpace(line), target, strings.TrimSpace(later))
			}
		}
	}
}
