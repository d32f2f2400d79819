package main

import (
	"strings"
	"testing"
)

// A provider turned on with sign-up closed and no access policy starts
// fine but lets nobody new in through the provider: only accounts that
// already linked it (on their account page, after a password sign-in) can
// use the button; everyone else is told there is no account. The start
// says so and how to open it; it is silent when sign-up is open, when a
// policy decides, and without a provider.
func TestStartWarnsWhenAProviderCanLetNobodyNewIn(t *testing.T) {
	github := []string{"--listen", "127.0.0.1:18080", "--github-client-id", "Iv1.x", "--github-client-secret", "s3cr3t-value"}
	warned := func(logs string) bool {
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, "level=WARN") && strings.Contains(line, "--open-signup") && strings.Contains(line, "--allow-email-domain") {
				return true
			}
		}
		return false
	}
	logs := startLogs(t, github...)
	if !warned(logs) {
		t.Errorf("%q starts without a warning that sign-up is closed:\n%s", github, logs)
	}
	if strings.Contains(logs, "s3cr3t-value") {
		t.Errorf("the client secret is in the log:\n%s", logs)
	}
	for _, extra := range [][]string{
		{"--open-signup"},
		{"--allow-email-domain", "corp.com"},
		{"--github-org", "acme"},
	} {
		if logs := startLogs(t, append(append([]string{}, github...), extra...)...); warned(logs) {
			t.Errorf("%q warns about closed sign-up:\n%s", extra, logs)
		}
	}
	if logs := startLogs(t, "--listen", "127.0.0.1:18080"); warned(logs) {
		t.Errorf("no provider, yet a warning about provider sign-up:\n%s", logs)
	}
}
