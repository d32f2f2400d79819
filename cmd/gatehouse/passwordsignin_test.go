package main

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// --password-sign-in=false makes the sign-in page SSO-only; without a
// provider nobody could sign in, so that is a usage error naming the flag.
func TestPasswordSignInFlag(t *testing.T) {
	base := []string{"--upstream", "http://127.0.0.1:3000", "--db", filepath.Join(t.TempDir(), "g.db")}
	cfg, err := parseServe(append(base, "--password-sign-in=false", "--github-client-id", "Iv1.x", "--github-client-secret", "s"), envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.PasswordSignIn {
		t.Error("--password-sign-in=false left password sign-in on")
	}
	if cfg, err := parseServe(base, envOf(nil), io.Discard); err != nil || !cfg.PasswordSignIn {
		t.Errorf("default: password sign-in %v, %v; want on", cfg.PasswordSignIn, err)
	}
	var errOut bytes.Buffer
	code := run(append([]string{"--password-sign-in=false", "--listen", "127.0.0.1:18080"}, base...), strings.NewReader(""), io.Discard, &errOut, envOf(nil))
	if code != 2 || !strings.Contains(errOut.String(), "--password-sign-in") {
		t.Errorf("without a provider: exit %d, %q; want 2 naming --password-sign-in", code, errOut.String())
	}
}
