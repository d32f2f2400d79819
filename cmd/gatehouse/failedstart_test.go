package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A start that fails creates nothing: not the database file, not the mail
// folder (with the folders above it), not the audit log, whichever step
// failed (issue 16, item 4).
func TestFailedStartCreatesNothing(t *testing.T) {
	held := listenLoopback(t)
	defer held.Close()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"port taken", []string{"--listen", held.Addr().String()}, "--listen"},
		{"admin port taken", []string{"--listen", "127.0.0.1:0", "--admin-listen", held.Addr().String()}, "--admin-listen"},
		{"mail folder below a file", []string{"--listen", "127.0.0.1:0", "--admin-listen", "", "--mail-dir", "TEMPLATES/login.html/mail"}, "--mail-dir"},
		{"bad templates dir", []string{"--listen", "127.0.0.1:0", "--admin-listen", "", "--templates-dir", "TEMPLATES"}, "templates"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "TEMPLATES"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "TEMPLATES", "login.html"), []byte("{{ .Broken"), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"--upstream", "http://127.0.0.1:3000", "--db", filepath.Join(dir, "gatehouse.db"),
				"--mail-dir", filepath.Join(dir, "spool", "mail"), "--audit-log", filepath.Join(dir, "audit.log"),
				"--admin-socket", filepath.Join(dir, "admin.sock"), "--base-url", "http://localhost:8080"}
			for i, a := range tc.args {
				tc.args[i] = strings.ReplaceAll(a, "TEMPLATES", filepath.Join(dir, "TEMPLATES"))
			}
			var out, errOut bytes.Buffer
			code := run(append(args, tc.args...), strings.NewReader(""), &out, &errOut, envOf(nil))
			if code == 0 || !strings.Contains(errOut.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q; want a failure naming %s", code, errOut.String(), tc.want)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Name() != "TEMPLATES" {
					t.Errorf("the failed start left %s behind", e.Name())
				}
			}
		})
	}
}
