package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The access-denied page answered to a browser: a short title carrying the
// app's name (as the sign-in pages' titles do), the name above the heading,
// a sign-out button, the code small and last; dark mode declared as on the
// other pages. Without a name it still reads, naming no app. Not a browser:
// problem+json.
func TestAccessDeniedPage(t *testing.T) {
	for _, tc := range []struct {
		app       string
		title     string
		want, not []string
	}{
		{app: "Acme <Reports>", title: "<title>Not allowed · Acme &lt;Reports&gt;</title>",
			want: []string{`<p class="app">Acme &lt;Reports&gt;</p>`, "may not use Acme &lt;Reports&gt;."}},
		{app: "", title: "<title>Not allowed</title>", want: []string{"may not use this application."}, not: []string{`class="app"`, "<title>Not allowed · "}},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/reports", nil)
		r.Header.Set("Accept", "text/html")
		Denier{AppName: tc.app}.AccessDenied(w, r)
		body := w.Body.String()
		if w.Code != http.StatusForbidden || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") || w.Header().Get("Content-Security-Policy") != PageCSP {
			t.Fatalf("app %q: %d %v", tc.app, w.Code, w.Header())
		}
		want := append([]string{tc.title, "<h1>Not allowed</h1>", `<form method="post" action="/auth/logout">`,
			`<meta name="color-scheme" content="light dark">`, `<p class="muted code">Error 403 · access_denied</p>`}, tc.want...)
		for _, s := range want {
			if !strings.Contains(body, s) {
				t.Errorf("app %q: page lacks %s:\n%s", tc.app, s, body)
			}
		}
		for _, s := range tc.not {
			if strings.Contains(body, s) {
				t.Errorf("app %q: page has %s:\n%s", tc.app, s, body)
			}
		}
	}

	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/api/items", nil)
	r.Header.Set("Accept", "application/json")
	Denier{AppName: "Acme"}.AccessDenied(w, r)
	if w.Code != http.StatusForbidden || w.Header().Get("Content-Type") != "application/problem+json" || !strings.Contains(w.Body.String(), `"code":"access_denied"`) {
		t.Errorf("API request: %d %q %s", w.Code, w.Header().Get("Content-Type"), w.Body.String())
	}
}
