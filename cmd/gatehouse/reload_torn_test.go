package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/policy"
	"github.com/gatehouse-auth/gatehouse/proxy/route"
)

// tornReloader is the reloader of a start on path, with its route table
// and policy, and no Run: the test makes each look.
func tornReloader(t *testing.T, path string) (*reloader, *route.Live, *policy.Policy) {
	t.Helper()
	cfg, err := parseServe([]string{"--config", path, "--upstream", "http://127.0.0.1:3000", "--base-url", "http://127.0.0.1:4180"}, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	pol, err := policy.New(cfg.Policy, log)
	if err != nil {
		t.Fatal(err)
	}
	table, err := route.NewTable(cfg.PublicPaths, cfg.Routes)
	if err != nil {
		t.Fatal(err)
	}
	live := &route.Live{}
	live.Store(table)
	return newReloader(cfg, live, pol, log, time.Now), live, pol
}

// A configuration file rewritten in place (truncated, then written: shell
// redirection, os.WriteFile, most tools) is empty, or half written, for a
// moment. A look that falls in that moment must not put it in force: an
// empty file has no route rules and no access policy, so every deny and
// groups rule and the email domain rule would be gone until the next look.
func TestReloadIgnoresAFileCaughtMidWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gatehouse.yaml")
	full := "allow-email-domain: [corp.com]\nroutes:\n  - path: /admin/\n    allow: deny\n  - path: /private/\n    allow: deny\n"
	if err := os.WriteFile(path, []byte(full), 0o600); err != nil {
		t.Fatal(err)
	}
	r, live, pol := tornReloader(t, path)
	held := func(when string) {
		t.Helper()
		for _, p := range []string{"/admin/x", "/private/x"} {
			if got := live.Rules().Match("app.example.com", "GET", p); got.Allow != route.Deny {
				t.Errorf("%s: GET %s gets %s, want the deny rule of the whole file", when, p, got)
			}
		}
		if pol.Passes("eve@evil.example", false, "") {
			t.Errorf("%s: the access policy lets eve@evil.example in", when)
		}
	}

	// Truncated: the writer has opened the file and not written yet.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	r.look(false)
	held("file truncated in place")

	// Half written: the first rule only.
	if err := os.WriteFile(path, []byte(full[:len("allow-email-domain: [corp.com]\nroutes:\n  - path: /admin/\n    allow: deny\n")]), 0o600); err != nil {
		t.Fatal(err)
	}
	r.look(false)
	held("file half written")

	// Written whole: in force within the next looks.
	changed := full + "  - path: /ops/\n    allow: deny\n"
	if err := os.WriteFile(path, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r.look(false)
	}
	held("file written whole")
	if got := live.Rules().Match("app.example.com", "GET", "/ops/x"); got.Allow != route.Deny {
		t.Errorf("the whole new file is not in force after three looks: /ops/x gets %s", got)
	}

	// Left empty (a failed template, a writer stalled): refused like a
	// broken file, whatever the number of looks.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r.look(false)
	}
	held("file left empty")
	if st := r.status(); !strings.Contains(st, "empty") {
		t.Errorf("/readyz note for an empty file: %q", st)
	}
}
