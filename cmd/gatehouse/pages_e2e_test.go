package main

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// Through the real wiring, in redirect mode: a navigation gets the 302, a
// fetch() or JSON client gets 401 with X-Gatehouse-Login and nothing
// reaches the upstream; a signed-out browser's sign-in page clears the cache.
func TestNonNavigationGets401WithLoginHeader(t *testing.T) {
	up, hits := echoUpstream(t)
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	g := startGatehouse(t, db, "--upstream", up.URL)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	login := g.URL + "/auth/login?rd=" + url.QueryEscape("/api/items?page=2")

	status, h, _ := do(t, noRedirect, "GET", g.URL+"/api/items?page=2", "", "", "Sec-Fetch-Mode", "navigate", "Accept", "text/html")
	if status != http.StatusFound || h.Get("Location") != login {
		t.Errorf("navigation: %d %q", status, h.Get("Location"))
	}
	for _, header := range [][]string{
		{"Sec-Fetch-Mode", "cors", "Accept", "*/*"},
		{"Accept", "application/json"},
		{"X-Requested-With", "XMLHttpRequest"},
	} {
		status, h, body := do(t, noRedirect, "GET", g.URL+"/api/items?page=2", "", "", header...)
		if status != http.StatusUnauthorized || h.Get("X-Gatehouse-Login") != login || h.Get("Location") != "" ||
			h.Get("Content-Type") != "application/problem+json" || !strings.Contains(body, `"code":"unauthenticated"`) {
			t.Errorf("%v: %d %v %s", header, status, h, body)
		}
	}
	if *hits != 0 {
		t.Errorf("the upstream got %d requests", *hits)
	}

	status, h, body := do(t, noRedirect, "GET", g.URL+"/auth/login", "", "", "Accept", "text/html")
	if status != http.StatusOK || !strings.Contains(body, `href="/auth/assets/signed-out.css"`) {
		t.Errorf("sign-in page: %d %s", status, body)
	}
	status, h, _ = do(t, noRedirect, "GET", g.URL+"/auth/assets/signed-out.css", "", "")
	if status != http.StatusOK || h.Get("Clear-Site-Data") != `"cache"` {
		t.Errorf("signed-out.css: %d %v", status, h)
	}
}
