package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTokenKey writes a fresh base64 token key file (with a trailing
// newline, as `head -c 32 /dev/urandom | base64 > F` makes it).
func writeTokenKey(t *testing.T) string {
	t.Helper()
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	path := filepath.Join(t.TempDir(), "token-key")
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(raw)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// README (--token-key-file): a missing file or one that is not a 32-byte
// key stops the start with exit 2 and one line naming the flag; a good one
// is read.
func TestTokenKeyFileFlag(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte(base64.StdEncoding.EncodeToString(make([]byte, 16))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing"), short, dir} {
		var out, errOut bytes.Buffer
		code := run([]string{"--upstream", "http://127.0.0.1:3000", "--token-key-file", path}, nil, &out, &errOut, envOf(nil))
		line := strings.TrimSpace(errOut.String())
		if code != 2 || strings.Count(line, "\n") != 0 || !strings.Contains(line, "--token-key-file") {
			t.Errorf("--token-key-file %s: exit %d, stderr %q; want 2 and one line naming the flag", path, code, errOut.String())
		}
	}
	cfg, err := parseServe([]string{"--upstream", "http://127.0.0.1:3000", "--token-key-file", writeTokenKey(t)}, envOf(nil), &bytes.Buffer{})
	if err != nil || cfg.Freshness.TokenKey == nil {
		t.Fatalf("a base64 key file: key %v, err %v", cfg.Freshness.TokenKey, err)
	}
}

// Without --token-key-file a start with a provider warns once that its
// sign-ins are not checked again; with the key, or without a provider,
// there is no such warning.
func TestTokenKeyMissingWarnsOnce(t *testing.T) {
	google := []string{"--google-client-id", "id", "--google-client-secret", "s"}
	logs := startLogs(t, google...)
	if n := strings.Count(logs, "--token-key-file"); n != 1 {
		t.Errorf("google without --token-key-file: %d warnings naming the flag, want 1:\n%s", n, logs)
	}
	if logs := startLogs(t, append(google, "--token-key-file", writeTokenKey(t))...); strings.Contains(logs, "--token-key-file") {
		t.Errorf("google with --token-key-file warns:\n%s", logs)
	}
	if logs := startLogs(t); strings.Contains(logs, "--token-key-file") {
		t.Errorf("no provider, yet a warning about --token-key-file:\n%s", logs)
	}
}

// README (--session-refresh): 0 turns the check off; otherwise at least
// 1s; anything else stops the start naming the flag.
func TestSessionRefreshFlag(t *testing.T) {
	for _, tc := range []struct {
		value string
		ok    bool
	}{{"0", true}, {"1s", true}, {"1h", true}, {"500ms", false}, {"-1s", false}} {
		_, err := parseServe([]string{"--upstream", "http://127.0.0.1:3000", "--session-refresh", tc.value}, envOf(nil), &bytes.Buffer{})
		if (err == nil) != tc.ok {
			t.Errorf("--session-refresh %s: err %v, want ok %v", tc.value, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--session-refresh") {
			t.Errorf("--session-refresh %s: error %q does not name the flag", tc.value, err)
		}
	}
}
