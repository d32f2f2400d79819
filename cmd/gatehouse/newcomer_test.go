package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The most common first mistake: the address of the app without a scheme,
// as it is printed by most dev servers ("listening on 127.0.0.1:3000").
// `localhost:3000` gets "needs an http:// or https:// scheme", which says
// what to do; `127.0.0.1:3000` (and any host:port whose host is an IP
// address, which url.Parse refuses outright) gets only "is not a URL",
// which does not. The same holds for --base-url.
func TestHostPortWithoutSchemeSaysWhatToDo(t *testing.T) {
	for _, tc := range []struct{ flag, value string }{
		{"--upstream", "127.0.0.1:3000"},
		{"--upstream", "localhost:3000"},
		{"--upstream", "[::1]:3000"},
		{"--base-url", "127.0.0.1:8080"},
		{"--base-url", "localhost:8080"},
	} {
		args := []string{"--upstream", "http://127.0.0.1:3000", "--listen", "127.0.0.1:8080"}
		args = append(args, tc.flag, tc.value)
		_, err := parseServe(args, envOf(nil), io.Discard)
		if err == nil {
			t.Errorf("%s %s: accepted", tc.flag, tc.value)
			continue
		}
		if !strings.Contains(err.Error(), "http://") {
			t.Errorf("%s %s: %q does not say to add http:// (as a localhost:PORT value does)", tc.flag, tc.value, err)
		}
	}
}

// The operator manual once said a disabled user's password sign-in "gives
// the usual `invalid_credentials`", while elsewhere it said a sign-in whose
// credentials check out answers 403 `account_disabled`. The server does the
// latter (the sign-in page even says "This account is disabled."), so the
// first sentence told an operator the wrong code to look for. Every document
// (the README, the operator manual deploy/README.md and its chapters in
// docs/) is held to what the server answers.
func TestDocsDisabledPasswordSignInCode(t *testing.T) {
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	addUser(t, db, "alice@example.com", testPassword)
	var out, errOut bytes.Buffer
	if code := run([]string{"users", "disable", "--db", db, "alice@example.com"}, strings.NewReader(""), &out, &errOut, envOf(nil)); code != 0 {
		t.Fatalf("users disable: exit %d: %s", code, errOut.String())
	}
	up, _ := echoUpstream(t)
	g := startGatehouse(t, db, "--upstream", up.URL)
	body, _ := json.Marshal(map[string]string{"email": "alice@example.com", "password": testPassword})
	res, err := http.Post(g.URL+"/auth/login", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var problem struct {
		Code string `json:"code"`
	}
	_ = json.NewDecoder(res.Body).Decode(&problem)
	t.Logf("disabled user, right password: %d %s", res.StatusCode, problem.Code)

	root := filepath.Join("..", "..")
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if len(docs) == 0 {
		t.Fatal("no chapter of the operator manual in docs/")
	}
	docs = append(docs, filepath.Join(root, "README.md"), filepath.Join(root, "deploy", "README.md"))
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(data)), " ")
		claims := regexp.MustCompile("password sign-in gives the usual `([a-z_]+)`").FindAllStringSubmatch(text, -1)
		for _, m := range claims {
			if m[1] != problem.Code {
				t.Errorf("%s says a disabled user's password sign-in gives %q; the server answers %d %q",
					doc, m[1], res.StatusCode, problem.Code)
			}
		}
	}
}
