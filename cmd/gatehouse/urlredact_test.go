package main

// Findings of review r2 (f2da7b1..HEAD). Each test fails against the code
// it was written for.

import (
	"bytes"
	"strings"
	"testing"
)

// parseURL promises "No error prints a password the value may hold, parsed
// or not" (LG1). Two roads still print it:
//   - a value that parses but has no http(s) scheme: the scheme and the host
//     errors echo raw, user info included. Leaving out the scheme is the
//     common slip ("admin:pw@127.0.0.1:3000" parses with scheme "admin"),
//     and so is a typo in it ("htps://");
//   - a value that does not parse because the password holds an unescaped
//     "/", "?" or "#": redactUserinfo looks for the "@" only before the first
//     of those characters, finds none and returns raw.
func TestURLErrorNeverPrintsThePassword(t *testing.T) {
	for _, raw := range []string{
		"admin:s3cret-pw@127.0.0.1:3000",        // no scheme: parses, scheme "admin"
		"htps://admin:s3cret-pw@127.0.0.1:3000", // a typo in the scheme: parses
		"http://admin:s3cret#pw@127.0.0.1:3000", // '#' in the password: does not parse
		"http://admin:s3cret/pw@127.0.0.1:3000", // '/' in the password: does not parse
		"http://admin:s3cret?pw@127.0.0.1:3000", // '?' in the password: does not parse
	} {
		_, err := parseServe([]string{"--upstream", raw}, envOf(nil), &bytes.Buffer{})
		if err == nil {
			t.Errorf("--upstream %q: accepted", raw)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("--upstream %q: the error prints the password: %v", raw, err)
		}
	}
}
