package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestWantsHTML(t *testing.T) {
	cases := []struct {
		name        string
		accept      []string // Accept header lines
		contentType string
		want        bool
	}{
		{"nothing", nil, "", false},
		{"curl", []string{"*/*"}, "", false},
		{"json", []string{"application/json"}, "", false},
		{"problem json", []string{"application/problem+json"}, "", false},
		{"html", []string{"text/html"}, "", true},
		{"xhtml", []string{"application/xhtml+xml"}, "", true},
		{"browser navigation", []string{"text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8"}, "", true},
		{"fetch default", []string{"*/*"}, "application/json", false},
		{"upper case", []string{"TEXT/HTML"}, "", true},
		{"spaces around", []string{"  text/html  ;  q=0.8 , application/json;q=0.5"}, "", true},
		{"json preferred by q", []string{"text/html;q=0.5, application/json;q=0.9"}, "", false},
		{"html preferred by q", []string{"application/json;q=0.4, text/html;q=0.9"}, "", true},
		{"json first, html equal", []string{"application/json, text/html"}, "", false},
		{"html first, json equal", []string{"text/html, application/json"}, "", false},
		{"html refused", []string{"text/html;q=0"}, "", false},
		{"html refused, json refused", []string{"text/html;q=0, application/json;q=0"}, "", false},
		{"only html acceptable", []string{"application/json;q=0, text/html;q=0.1"}, "", true},
		{"html with parameters", []string{"text/html;level=1;charset=utf-8"}, "", true},
		{"second Accept line", []string{"image/png", "text/html"}, "", true},
		{"second Accept line prefers json", []string{"text/html;q=0.5", "application/json"}, "", false},
		// Exact-string traps: the media type is compared, not a substring.
		{"htmlx", []string{"text/htmlx"}, "", false},
		{"html in a parameter", []string{"application/json; profile=text/html"}, "", false},
		{"html as a suffix", []string{"application/text/html"}, "", false},
		{"text plain", []string{"text/plain"}, "", false},
		{"garbage", []string{";;;,,,"}, "", false},
		// Form posts get pages whatever they accept.
		{"urlencoded form", nil, "application/x-www-form-urlencoded", true},
		{"urlencoded form with charset", []string{"application/json"}, "application/x-www-form-urlencoded; charset=UTF-8", true},
		{"multipart form", nil, "multipart/form-data; boundary=----x", true},
		{"form type trap", nil, "application/x-www-form-urlencodedx", false},
		{"json body", []string{"*/*"}, "application/json; charset=utf-8", false},
	}
	for _, tc := range cases {
		r := httptest.NewRequest(http.MethodPost, "/auth/login", nil)
		for _, a := range tc.accept {
			r.Header.Add("Accept", a)
		}
		if tc.contentType != "" {
			r.Header.Set("Content-Type", tc.contentType)
		}
		if got := WantsHTML(r); got != tc.want {
			t.Errorf("%s: WantsHTML = %v, want %v (Accept %q, Content-Type %q)", tc.name, got, tc.want, tc.accept, tc.contentType)
		}
	}
}

func TestWriteProblemJSON(t *testing.T) {
	for _, p := range []Problem{
		NewProblem(http.StatusBadRequest, "invalid_token", "Invalid or expired reset token"),
		{Type: "about:blank", Title: "Too many requests", Status: http.StatusTooManyRequests, Code: "rate_limited", Detail: "Try again later."},
	} {
		w := httptest.NewRecorder()
		WriteProblem(w, httptest.NewRequest(http.MethodPost, "/auth/reset", nil), p)
		res := w.Result()
		if res.StatusCode != p.Status {
			t.Errorf("%s: status %d, want %d", p.Code, res.StatusCode, p.Status)
		}
		for name, want := range map[string]string{
			"Content-Type":           "application/problem+json",
			"Cache-Control":          "no-store",
			"X-Content-Type-Options": "nosniff",
		} {
			if got := res.Header.Get(name); got != want {
				t.Errorf("%s: %s %q, want %q", p.Code, name, got, want)
			}
		}
		var members map[string]any
		if err := json.NewDecoder(res.Body).Decode(&members); err != nil {
			t.Fatalf("%s: body is not JSON: %v", p.Code, err)
		}
		want := map[string]any{"type": "about:blank", "title": p.Title, "status": float64(p.Status), "code": p.Code}
		if p.Detail != "" {
			want["detail"] = p.Detail
		}
		if len(members) != len(want) {
			t.Errorf("%s: members %v, want %v", p.Code, members, want)
		}
		for k, v := range want {
			if members[k] != v {
				t.Errorf("%s: %s = %v, want %v", p.Code, k, members[k], v)
			}
		}
	}
}

func TestWriteProblemHTML(t *testing.T) {
	p := Problem{Type: "about:blank", Title: "Invalid <link>", Status: http.StatusBadRequest, Code: "invalid_token", Detail: `<script>alert("x")</script>`}
	for name, r := range map[string]*http.Request{
		"browser":   httptest.NewRequest(http.MethodGet, "/auth/reset", nil),
		"form post": httptest.NewRequest(http.MethodPost, "/auth/reset", strings.NewReader("token=x")),
	} {
		if name == "browser" {
			r.Header.Set("Accept", "text/html,*/*;q=0.8")
		} else {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		w := httptest.NewRecorder()
		WriteProblem(w, r, p)
		res := w.Result()
		body := w.Body.String()
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d", name, res.StatusCode)
		}
		if ct := res.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("%s: Content-Type %q", name, ct)
		}
		if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%s: Cache-Control %q", name, cc)
		}
		if csp := res.Header.Get("Content-Security-Policy"); csp != PageCSP {
			t.Errorf("%s: Content-Security-Policy %q", name, csp)
		}
		if !strings.HasPrefix(body, "<!doctype html>") || !strings.Contains(body, "invalid_token") || !strings.Contains(body, "400") {
			t.Errorf("%s: page lacks the status or code: %s", name, body)
		}
		if strings.Contains(body, "<script>") || strings.Contains(body, "<link>") || !strings.Contains(body, "&lt;script&gt;") {
			t.Errorf("%s: title or detail not escaped: %s", name, body)
		}
	}
}

func TestNoStore(t *testing.T) {
	h := http.Header{"Cache-Control": {"public, max-age=3600"}}
	NoStore(h)
	if got := h.Values("Cache-Control"); len(got) != 1 || got[0] != "no-store" {
		t.Errorf("Cache-Control %q", got)
	}
	if h.Get("Pragma") != "no-cache" {
		t.Errorf("Pragma %q", h.Get("Pragma"))
	}
}
