package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// In redirect mode, a GET that is not a top-level navigation gets 401
// problem+json with the sign-in address in X-Gatehouse-Login, not a 302.
func TestDenyNonNavigation(t *testing.T) {
	base, _ := url.Parse("https://gate.example.com")
	const login = "https://gate.example.com/auth/login?rd=%2Fapi%2Fitems%3Fpage%3D2"
	cases := []struct {
		name     string
		header   map[string]string
		redirect bool
	}{
		{"plain GET (curl, old browsers)", nil, true},
		{"browser navigation", map[string]string{"Sec-Fetch-Mode": "navigate", "Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}, true},
		{"fetch()", map[string]string{"Sec-Fetch-Mode": "cors", "Accept": "*/*"}, false},
		{"same-origin fetch", map[string]string{"Sec-Fetch-Mode": "same-origin"}, false},
		{"image", map[string]string{"Sec-Fetch-Mode": "no-cors", "Accept": "image/avif,image/webp,*/*"}, false},
		{"JSON preferred", map[string]string{"Accept": "application/json, text/html;q=0.5"}, false},
		{"JSON only", map[string]string{"Accept": "application/json"}, false},
		{"HTML preferred", map[string]string{"Accept": "text/html, application/json;q=0.5"}, true},
		{"XMLHttpRequest", map[string]string{"X-Requested-With": "XMLHttpRequest", "Accept": "text/html"}, false},
	}
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		for _, tc := range cases {
			r := httptest.NewRequest(method, "/api/items?page=2", nil)
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			Denier{Mode: ModeRedirect, BaseURL: base}.Deny(w, r)
			name := method + " " + tc.name
			if tc.redirect {
				if w.Code != http.StatusFound || w.Header().Get("Location") != login {
					t.Errorf("%s: %d %q, want 302 to sign-in", name, w.Code, w.Header().Get("Location"))
				}
				continue
			}
			if w.Code != http.StatusUnauthorized || w.Header().Get("Location") != "" {
				t.Errorf("%s: %d Location %q, want 401 without Location", name, w.Code, w.Header().Get("Location"))
			}
			if got := w.Header().Get(LoginHeader); got != login {
				t.Errorf("%s: %s %q, want %q", name, LoginHeader, got, login)
			}
			if w.Header().Get("WWW-Authenticate") == "" || w.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("%s: headers %v", name, w.Header())
			}
			if method == http.MethodGet && w.Header().Get("Content-Type") == "application/problem+json" {
				var p Problem
				if err := json.NewDecoder(w.Body).Decode(&p); err != nil || p.Code != "unauthenticated" {
					t.Errorf("%s: problem %+v %v", name, p, err)
				}
			}
		}
	}
	// A POST in redirect mode: 401 with the header too; in 401 mode no header.
	w := httptest.NewRecorder()
	Denier{Mode: ModeRedirect, BaseURL: base}.Deny(w, httptest.NewRequest(http.MethodPost, "/api/items?page=2", nil))
	if w.Code != http.StatusUnauthorized || w.Header().Get(LoginHeader) != login {
		t.Errorf("POST: %d %q", w.Code, w.Header().Get(LoginHeader))
	}
	w = httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/api/items", nil)
	r.Header.Set("Sec-Fetch-Mode", "cors")
	Denier{Mode: Mode401, BaseURL: base}.Deny(w, r)
	if w.Code != http.StatusUnauthorized || w.Header().Get(LoginHeader) != "" {
		t.Errorf("401 mode: %d %q", w.Code, w.Header().Get(LoginHeader))
	}
}

// The HTML 401 page of a form POST in redirect mode offers the sign-in
// address as its action.
func TestUnauthenticatedPageOffersSignIn(t *testing.T) {
	base, _ := url.Parse("https://gate.example.com")
	r := httptest.NewRequest(http.MethodPost, "/app/save", strings.NewReader("a=1"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	Denier{Mode: ModeRedirect, BaseURL: base}.Deny(w, r)
	body := w.Body.String()
	for _, want := range []string{"<h1>Please sign in</h1>", `<a class="button" href="https://gate.example.com/auth/login?rd=%2Fapp%2Fsave">Sign in</a>`, "Error 401 · unauthenticated"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q:\n%s", want, body)
		}
	}
}

// Every built-in error page has a heading, what to do, one action and the
// code last; a code without its own words still gets a way out.
func TestErrorPageHelp(t *testing.T) {
	for _, p := range []Problem{
		NewProblem(http.StatusGone, "invalid_token", "Invalid or expired reset token"),
		NewProblem(http.StatusBadGateway, "upstream_unavailable", "The application is not reachable"),
		NewProblem(http.StatusTeapot, "something_new", "Something new"),
	} {
		r := httptest.NewRequest(http.MethodGet, "/reports?x=1", nil)
		r.Header.Set("Accept", "text/html")
		w := httptest.NewRecorder()
		WriteProblem(w, r, p)
		body := w.Body.String()
		h := HelpFor(r, p)
		if h.Heading == "" || h.Next == "" || h.Action == "" || h.ActionURL == "" {
			t.Errorf("%s: help %+v", p.Code, h)
		}
		action := strings.Index(body, `class="button"`)
		code := strings.Index(body, "Error "+strconv.Itoa(p.Status)+" · "+p.Code)
		if action < 0 || code < 0 || action > code || !strings.Contains(body, "<h1>"+h.Heading+"</h1>") {
			t.Errorf("%s: page\n%s", p.Code, body)
		}
	}
	if h := HelpFor(httptest.NewRequest(http.MethodGet, "/reports?x=1", nil), NewProblem(http.StatusBadGateway, "upstream_unavailable", "x")); h.ActionURL != "/reports?x=1" {
		t.Errorf("server trouble on a GET: try again at %q, want the same address", h.ActionURL)
	}
	if h := HelpFor(httptest.NewRequest(http.MethodGet, "/x", nil), NewProblem(http.StatusGone, "invalid_token", "x")); h.ActionURL != "/auth/forgot" {
		t.Errorf("invalid_token: action %q", h.ActionURL)
	}
}
