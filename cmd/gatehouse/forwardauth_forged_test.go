package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// PX1 in front of Gatehouse: the example nginx and Caddy configs keep from
// the app every client-sent header that Gatehouse's own proxy removes as a
// forged identity or routing header (proxy/headers.go), in every spelling
// Gatehouse reads as the same name ("_" for "-": CGI, WSGI, Rack and PHP
// read X_Forwarded_User, X-Forwarded_User and X-Forwarded-User as one
// variable). An app behind the example trusts Remote-User or
// X-Auth-Request-User as it would behind Gatehouse's own proxy.
func TestNginxForwardAuthDropsForgedHeaders(t *testing.T) {
	checkForgedHeadersDropped(t, "nginx", false)
}

// Caddy removes whole families by prefix, so any X-Auth-Request-* and
// X-Webauth-* name goes, not only the ones apps are known to read.
func TestCaddyForwardAuthDropsForgedHeaders(t *testing.T) {
	checkForgedHeadersDropped(t, "caddy", true)
}

// forgedHeaderNames are the client header names Gatehouse's proxy removes
// (read from proxy/*.go, so the test follows the list): each exact name,
// and for each prefix the names apps read under it (oauth2-proxy's
// X-Auth-Request-*, Grafana's X-WEBAUTH-*), plus an unknown one when
// anyUnderPrefix.
func forgedHeaderNames(t *testing.T, anyUnderPrefix bool) []string {
	t.Helper()
	lists := stringLists(t, filepath.Join("..", "..", "proxy"), "identityHeaders", "identityPrefixes", "routingHeaders")
	names := append(lists["identityHeaders"], lists["routingHeaders"]...)
	known := map[string][]string{
		"x-auth-request-": {"user", "email", "groups", "preferred-username", "access-token", "redirect"},
		"x-webauth-":      {"user", "email", "name", "role", "groups"},
	}
	for _, prefix := range lists["identityPrefixes"] {
		suffixes, ok := known[prefix]
		if !ok {
			t.Fatalf("proxy strips the prefix %q: name the headers apps read under it here", prefix)
		}
		for _, s := range suffixes {
			names = append(names, prefix+s)
		}
		if anyUnderPrefix {
			names = append(names, prefix+"anything-else")
		}
	}
	return names
}

// stringLists finds the package-level []string variables named in the Go
// files of dir (tests aside) and returns their values.
func stringLists(t *testing.T, dir string, names ...string) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, id := range spec.Names {
				if !want[id.Name] || i >= len(spec.Values) {
					continue
				}
				lit, ok := spec.Values[i].(*ast.CompositeLit)
				if !ok {
					continue
				}
				for _, e := range lit.Elts {
					if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
						s, _ := strconv.Unquote(b.Value)
						out[id.Name] = append(out[id.Name], s)
					}
				}
			}
			return true
		})
	}
	for _, n := range names {
		if len(out[n]) == 0 {
			t.Fatalf("no []string %s in %s: the test reads the proxy's list of forged headers from there", n, dir)
		}
	}
	return out
}

// spellings returns name as sent by clients: with "-", with "_", and with
// the first separator "_" and the others "-".
func spellings(name string) []string {
	out := []string{name, strings.ReplaceAll(name, "-", "_")}
	if strings.Count(name, "-") > 1 {
		out = append(out, strings.Replace(name, "-", "_", 1))
	}
	return out
}

func checkForgedHeadersDropped(t *testing.T, kind string, anyUnderPrefix bool) {
	front := freeAddr(t)
	g, app, _ := startFrontedGatehouse(t, front, "http")
	startFront(t, kind, front, g, app)
	base := "http://" + front

	names := forgedHeaderNames(t, anyUnderPrefix)
	forge := func(req *http.Request) {
		n := 0
		for _, name := range names {
			for _, s := range spellings(name) {
				n++
				// Set by hand: Go would canonicalize the key; the client
				// sends it as written.
				req.Header[s] = append(req.Header[s], fmt.Sprintf("forged-%d-%s", n, s))
			}
		}
		req.Header["X-Test-Control"] = []string{"control"}
	}
	check := func(what string, c *http.Client, target string) {
		t.Helper()
		req, err := http.NewRequest("GET", target, nil)
		if err != nil {
			t.Fatal(err)
		}
		forge(req)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d, want the app's 200", what, res.StatusCode)
		}
		var seen struct{ Header http.Header }
		if err := json.NewDecoder(res.Body).Decode(&seen); err != nil {
			t.Fatalf("%s: not the app's answer: %v", what, err)
		}
		if seen.Header.Get("X-Test-Control") != "control" {
			t.Fatalf("%s: the app did not get the client's other headers: %v", what, seen.Header)
		}
		for name, values := range seen.Header {
			for _, v := range values {
				if strings.Contains(v, "forged-") {
					t.Errorf("%s: the client's %s reached the app (%q)", what, name, v)
				}
			}
		}
	}

	// A public path, no session: the app gets the request, none of the
	// forged headers.
	check("public path, signed out", http.DefaultClient, base+"/static/app.css")
	// Signed in: Gatehouse's identity headers, none of the client's.
	c := newClient()
	login(t, c, base, "alice@example.com", testPassword)
	check("signed in", c, base+"/app/page")
}

// The forged names are read from the proxy's lists, every spelling of each:
// a check of the test itself, which needs no front.
func TestForgedHeaderNamesFollowTheProxy(t *testing.T) {
	names := forgedHeaderNames(t, true)
	for _, want := range []string{"remote-user", "x-forwarded-user", "x-gatehouse-jwt-assertion", "x-auth-request-user", "x-original-url"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Errorf("forged names %q lack %s", names, want)
		}
	}
	if got := spellings("x-forwarded-user"); strings.Join(got, " ") != "x-forwarded-user x_forwarded_user x_forwarded-user" {
		t.Errorf("spellings: %q", got)
	}
}
