package main

import (
	"net/http"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// --templates-dir and --app-name reach the running server (CONTRACT "Pages
// and browsers"), not only the flag check: an overridden page and style
// sheet are what /auth/ serves, the pages left alone carry the app's name,
// and the overridden mail subject is the one the mailed reset link has.
func TestTemplatesDirAndAppNameServed(t *testing.T) {
	dir := t.TempDir()
	tpl := filepath.Join(dir, "templates")
	if err := os.Mkdir(tpl, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"forgot.html":        `{{define "title"}}Lost it{{end}}{{define "content"}}<h1>Lost your key to {{appName}}?</h1><form method="post"><input name="email" id="email"><button>Send</button></form>{{end}}`,
		"style.css":          "body { --brand: rebeccapurple }\n",
		"reset.subject.tmpl": "Your {{.Site}} key",
	} {
		if err := os.WriteFile(filepath.Join(tpl, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(dir, "gatehouse.db")
	addUser(t, db, "alice@example.com", testPassword)
	up, _ := echoUpstream(t)
	g := startGatehouse(t, db, "--upstream", up.URL, "--templates-dir", tpl, "--app-name", "Acme Reports")
	c := newClient()

	for _, tc := range []struct{ path, want string }{
		{"/auth/forgot", "<h1>Lost your key to Acme Reports?</h1>"},
		{"/auth/forgot", "<title>Lost it · Acme Reports</title>"},
		{"/auth/assets/style.css", "--brand: rebeccapurple"},
		{"/auth/login", "Sign in · Acme Reports</title>"},
	} {
		if code, body := get(t, c, g.URL+tc.path); code != http.StatusOK || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s: %d, want %q in:\n%s", tc.path, code, tc.want, body)
		}
	}

	code, _, _ := do(t, c, "POST", g.URL+"/auth/forgot", "application/x-www-form-urlencoded", "email=alice%40example.com", "Origin", g.URL)
	if code/100 != 2 && code/100 != 3 {
		t.Fatalf("POST /auth/forgot: %d", code)
	}
	mailDir := filepath.Join(dir, "mail")
	var subject string
	for deadline := time.Now().Add(15 * time.Second); subject == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		files, _ := filepath.Glob(filepath.Join(mailDir, "*"))
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				continue
			}
			if msg, err := mail.ReadMessage(fh); err == nil {
				subject = msg.Header.Get("Subject")
			}
			fh.Close()
		}
	}
	if subject != "Your Acme Reports key" {
		t.Errorf("reset mail subject %q, want the overridden template with the app's name", subject)
	}
}
