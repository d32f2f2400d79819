package main

import (
	"bytes"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/authflows"
)

// --second-factor takes optional, required or required-all (default
// optional); --webauthn-rp-id must be the --base-url host or a domain it
// belongs to. A refusal is one line, exit 2.
func TestSecondFactorFlags(t *testing.T) {
	base := []string{"--upstream", "http://127.0.0.1:3000", "--base-url", "https://app.example.com", "--listen", "127.0.0.1:18080", "--admin-listen", ""}
	for _, tc := range []struct {
		args []string
		says []string
	}{
		{[]string{"--second-factor", "always"}, []string{"--second-factor", "always", "required-all"}},
		{[]string{"--webauthn-rp-id", "other.example.com"}, []string{"--webauthn-rp-id", "other.example.com"}},
		{[]string{"--webauthn-rp-id", "ample.com"}, []string{"--webauthn-rp-id", "ample.com"}},
		{[]string{"--webauthn-rp-id", "192.0.2.1"}, []string{"--webauthn-rp-id", "not a domain"}},
	} {
		db := filepath.Join(t.TempDir(), "g.db")
		code, out, errOut := cli(t, "", append(append(slices.Clone(base), "--db", db), tc.args...)...)
		if code != 2 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line", tc.args, code, out, errOut)
			continue
		}
		for _, s := range tc.says {
			if !strings.Contains(errOut, s) {
				t.Errorf("%v: %q does not say %q", tc.args, errOut, s)
			}
		}
	}
	for _, tc := range []struct {
		args   []string
		policy authflows.SecondFactorPolicy
		rpID   string
	}{
		{nil, authflows.SecondFactorOptional, ""},
		{[]string{"--second-factor", "required", "--webauthn-rp-id", "Example.com"}, authflows.SecondFactorRequired, "example.com"},
		{[]string{"--second-factor", "required-all", "--webauthn-rp-id", "app.example.com"}, authflows.SecondFactorRequiredAll, "app.example.com"},
	} {
		cfg, err := parseServe(append(slices.Clone(base), tc.args...), envOf(nil), io.Discard)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if cfg.SecondFactor.Policy != tc.policy || cfg.SecondFactor.RPID != tc.rpID {
			t.Errorf("%v: %+v, want %s and %q", tc.args, cfg.SecondFactor, tc.policy, tc.rpID)
		}
	}
	cfg, err := parseServe(base, envOf(map[string]string{"GATEHOUSE_SECOND_FACTOR": "required"}), io.Discard)
	if err != nil || cfg.SecondFactor.Policy != authflows.SecondFactorRequired {
		t.Errorf("from the environment: %+v, %v", cfg.SecondFactor, err)
	}
}

// With an IP address in --base-url and no --webauthn-rp-id, passkeys are
// off and the start says so once; a host name or an explicit id says nothing.
func TestPasskeysOffWarning(t *testing.T) {
	for _, tc := range []struct {
		args []string
		warn bool
	}{
		{[]string{"--base-url", "http://192.0.2.7:8080"}, true},
		{[]string{"--base-url", "http://[2001:db8::7]:8080"}, true},
		{[]string{"--base-url", "https://app.example.com"}, false},
		{[]string{"--base-url", "http://localhost:18080"}, false},
	} {
		args := append([]string{"--upstream", "http://127.0.0.1:3000", "--listen", "127.0.0.1:18080", "--admin-listen", ""}, tc.args...)
		cfg, err := parseServe(args, envOf(nil), io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		var logs bytes.Buffer
		startWarnings(slog.New(slog.NewTextHandler(&logs, nil)), cfg)
		if got := strings.Count(logs.String(), "passkeys are off"); got != map[bool]int{true: 1, false: 0}[tc.warn] {
			t.Errorf("%v: %d passkey warnings in\n%s", tc.args, got, logs.String())
		}
	}
}
