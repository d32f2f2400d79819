package route

import (
	"bufio"
	"net/http"
	"os"
	"path"
	"strings"
	"testing"
)

// cleanLikeProxy is the proxy's cleaning of a decoded request path
// (cleanPath in proxy/path.go, unexported there): path.Clean semantics,
// the trailing slash kept. The proxy hands Match only this.
func cleanLikeProxy(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	cleaned := path.Clean(p)
	if p[len(p)-1] == '/' && cleaned != "/" {
		cleaned += "/"
	}
	return cleaned
}

// outcome labels a rule as testdata/advisories.txt does.
func outcome(r Rule) string {
	switch {
	case r.Allow == Deny:
		return "deny"
	case r.Allow == Public:
		return "public"
	case len(r.Groups) > 0:
		return "admins"
	}
	return "authenticated"
}

// The peers' advisory classes at the matcher: each request of
// testdata/advisories.txt is read as Go's HTTP server reads it, its path
// cleaned as the proxy cleans it, and matched against the rules of
// testdata/advisories.yaml.
func TestAdvisoryClasses(t *testing.T) {
	doc, err := os.ReadFile("testdata/advisories.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := parseRoutes(t, string(doc))
	if err != nil {
		t.Fatal(err)
	}
	tab := mustTable(t, nil, rules...)
	f, err := os.Open("testdata/advisories.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n, cases := 0, 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 5 {
			t.Fatalf("advisories.txt:%d: want 5 columns: %q", n, line)
		}
		method, host, target, ambiguous, want := fields[0], fields[1], fields[2], fields[3], fields[4]
		raw := method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n"
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			t.Errorf("advisories.txt:%d: %s %s: the server would refuse it (%v); list only requests that get through", n, method, target, err)
			continue
		}
		cleaned := cleanLikeProxy(r.URL.Path)
		var got Rule
		if ambiguous == "yes" {
			got = tab.MatchAmbiguous(r.Host, r.Method)
		} else {
			got = tab.Match(r.Host, r.Method, cleaned)
		}
		if outcome(got) != want {
			t.Errorf("advisories.txt:%d: %s %s %s (cleaned %q): %s by rule %q, want %s", n, method, host, target, cleaned, outcome(got), got.Source, want)
		}
		cases++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cases < 50 {
		t.Fatalf("only %d cases read", cases)
	}
}
