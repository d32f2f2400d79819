package main

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// Through the real wiring, in redirect mode: a navigation gets the 302, a
// fetch() or JSON client gets 401 with X-Gatehouse-Login and nothing
// reaches the upstream; the sign-in page after a sign-out clears the cache.
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

	// A form sign-out (with or without a session) lands on /auth/login,
	// whose page then loads the asset that clears the cache; a plain visit
	// does not.
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Jar: jar, CheckRedirect: noRedirect.CheckRedirect}
	status, h, _ = do(t, browser, "POST", g.URL+"/auth/logout", "application/x-www-form-urlencoded", "", "Accept", "text/html")
	if status != http.StatusSeeOther || h.Get("Location") != "/auth/login" || h.Get("Clear-Site-Data") != `"cache"` {
		t.Errorf("form sign-out: %d %v", status, h)
	}
	status, _, page := do(t, browser, "GET", g.URL+"/auth/login", "", "", "Accept", "text/html")
	if status != http.StatusOK || !strings.Contains(page, `href="/auth/assets/clear-cache.css"`) || !strings.Contains(page, "You are signed out.") {
		t.Errorf("sign-in page after sign-out: %d %s", status, page)
	}
	if _, _, body := do(t, browser, "GET", g.URL+"/auth/login", "", "", "Accept", "text/html"); strings.Contains(body, "clear-cache.css") {
		t.Error("the sign-in page clears the cache on every later visit")
	}
	status, h, _ = do(t, noRedirect, "GET", g.URL+"/auth/assets/clear-cache.css", "", "")
	if status != http.StatusOK || h.Get("Clear-Site-Data") != `"cache"` {
		t.Errorf("clear-cache.css: %d %v", status, h)
	}
}
