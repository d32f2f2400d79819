package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// RM1–RM3: the answer of each mode and method.
func TestDeny(t *testing.T) {
	base, _ := url.Parse("https://gate.example.com")
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}
	for _, mode := range []Mode{ModeRedirect, Mode401} {
		for _, method := range methods {
			d := Denier{Mode: mode, BaseURL: base}
			r := httptest.NewRequest(method, "/app/x?a=1&b=two%20words", strings.NewReader("body"))
			r.Host = "evil.example"
			r.Header.Set("X-Forwarded-Host", "evil.example")
			w := httptest.NewRecorder()
			d.Deny(w, r)
			res := w.Result()
			name := string(mode) + " " + method
			if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("%s: Cache-Control %q, want no-store (RM3)", name, cc)
			}
			redirect := mode == ModeRedirect && (method == http.MethodGet || method == http.MethodHead)
			if redirect {
				if res.StatusCode != http.StatusFound {
					t.Errorf("%s: status %d, want 302", name, res.StatusCode)
				}
				want := "https://gate.example.com/auth/login?rd=%2Fapp%2Fx%3Fa%3D1%26b%3Dtwo%2520words"
				if loc := res.Header.Get("Location"); loc != want {
					t.Errorf("%s: Location %q, want %q", name, loc, want)
				}
				if res.Header.Get("WWW-Authenticate") != "" {
					t.Errorf("%s: a redirect carries WWW-Authenticate", name)
				}
				continue
			}
			if res.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s: status %d, want 401", name, res.StatusCode)
			}
			if res.Header.Get("Location") != "" {
				t.Errorf("%s: a 401 carries Location", name)
			}
			if wa := res.Header.Get("WWW-Authenticate"); !strings.HasPrefix(wa, "Cookie ") || !strings.Contains(wa, `realm="gatehouse"`) {
				t.Errorf("%s: WWW-Authenticate %q (RM2)", name, wa)
			}
			var p Problem
			if err := json.NewDecoder(res.Body).Decode(&p); err != nil || p.Code != "unauthenticated" || p.Status != http.StatusUnauthorized {
				t.Errorf("%s: problem %+v, %v", name, p, err)
			}
		}
	}
}

// The 401 page for browsers in --mode=401 keeps the status.
func TestDenyHTML(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/app", nil)
	r.Header.Set("Accept", "text/html")
	w := httptest.NewRecorder()
	Denier{Mode: Mode401}.Deny(w, r)
	if w.Code != http.StatusUnauthorized || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") || w.Header().Get("WWW-Authenticate") == "" {
		t.Fatalf("status %d, Content-Type %q, WWW-Authenticate %q", w.Code, w.Header().Get("Content-Type"), w.Header().Get("WWW-Authenticate"))
	}
}

// RM2: the Location comes from --base-url only, keeps its path prefix, and
// carries the original path and query in rd.
func TestLoginURL(t *testing.T) {
	cases := []struct {
		base, rd, want string
	}{
		{"https://gate.example.com", "/", "https://gate.example.com/auth/login?rd=%2F"},
		{"https://gate.example.com/", "/x", "https://gate.example.com/auth/login?rd=%2Fx"},
		{"https://example.com/gate", "/x?a=1", "https://example.com/gate/auth/login?rd=%2Fx%3Fa%3D1"},
		{"https://example.com/gate/", "/x?a=1&a=2", "https://example.com/gate/auth/login?rd=%2Fx%3Fa%3D1%26a%3D2"},
		{"https://example.com/gate//", "/x", "https://example.com/gate/auth/login?rd=%2Fx"},
		{"http://localhost:8080", "/a%20b?q=%26", "http://localhost:8080/auth/login?rd=%2Fa%2520b%3Fq%3D%2526"},
		{"https://example.com/my%20gate", "/x", "https://example.com/my%20gate/auth/login?rd=%2Fx"},
		{"https://example.com/?stale=1#frag", "/x", "https://example.com/auth/login?rd=%2Fx"},
	}
	for _, tc := range cases {
		base, err := url.Parse(tc.base)
		if err != nil {
			t.Fatal(err)
		}
		before := base.String()
		if got := (Denier{Mode: ModeRedirect, BaseURL: base}).LoginURL(tc.rd); got != tc.want {
			t.Errorf("base %s, rd %s: %q, want %q", tc.base, tc.rd, got, tc.want)
		}
		if base.String() != before {
			t.Errorf("LoginURL changed the base URL to %s", base)
		}
	}
}

// The redirect built from a request: the path prefix of the base URL and
// the request's own path and query.
func TestDenyRedirectWithPathPrefix(t *testing.T) {
	base, _ := url.Parse("https://example.com/gate")
	w := httptest.NewRecorder()
	Denier{Mode: ModeRedirect, BaseURL: base}.Deny(w, httptest.NewRequest(http.MethodGet, "/reports/2026?sort=desc&page=2", nil))
	want := "https://example.com/gate/auth/login?rd=%2Freports%2F2026%3Fsort%3Ddesc%26page%3D2"
	if loc := w.Header().Get("Location"); w.Code != http.StatusFound || loc != want {
		t.Fatalf("%d %q, want 302 %q", w.Code, loc, want)
	}
	rd, _ := url.Parse(w.Header().Get("Location"))
	if got := rd.Query().Get("rd"); got != "/reports/2026?sort=desc&page=2" {
		t.Fatalf("rd decodes to %q", got)
	}
}

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
