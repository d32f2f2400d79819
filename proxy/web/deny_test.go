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
