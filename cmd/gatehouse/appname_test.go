package main

import (
	"bytes"
	"strings"
	"testing"
)

// Review (x6): --app-name goes into every mail's Subject ("Reset your
// password for {{.Site}}"). A value with a line break (or another control
// character) is taken at start, and then every reset, invitation and notice
// mail fails at delivery (mailtemplates.go render: "subject: must be one
// non-empty line"), retried for a day and dropped: the header injection is
// stopped, but at the cost of all mail, long after the start said the
// flags were fine. CONTRACT: "Bad flag values stop the process at start
// with a one-line error naming the flag".
func TestAppNameWithLineBreakRefusedAtStart(t *testing.T) {
	up := []string{"--upstream", "http://127.0.0.1:3000", "--base-url", "https://app.example.com"}
	for _, name := range []string{"Acme\r\nBcc: attacker@evil.example", "Acme\nReports"} {
		_, err := parseServe(append(up, "--app-name", name), envOf(nil), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "--app-name") {
			t.Errorf("--app-name %q: err = %v, want a refusal naming --app-name", name, err)
		}
	}
}
