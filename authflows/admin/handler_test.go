package admin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Oversized, malformed, ambiguous or unknown-field bodies are refused with
// 400 before anything is done: no user, no audit event, and no echo of the
// password in the answer.
func TestHandlerRefusesBadBodies(t *testing.T) {
	f := newFixture(t)
	h := NewHandler(f.svc, nil)
	const pw = "Sekrit-Pa55-word-long"
	for _, tc := range []struct{ name, body string }{
		{"oversized", `{"email":"ann@example.com","password":"` + strings.Repeat("x", 1<<20) + `"}`},
		{"malformed", `{"email":"ann@example.com","password":"` + pw},
		{"not an object", `["ann@example.com","` + pw + `"]`},
		{"unknown field", `{"email":"ann@example.com","password":"` + pw + `","admin":true}`},
		{"two objects", `{"email":"ann@example.com","password":"` + pw + `"}{"email":"bob@example.com","invite":true}`},
		{"trailing garbage", `{"email":"ann@example.com","password":"` + pw + `"} x`},
		{"wrong type", `{"email":"ann@example.com","password":12345678901234}`},
	} {
		r := httptest.NewRequest(http.MethodPost, "/v1/users", strings.NewReader(tc.body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400 (%s)", tc.name, w.Code, w.Body.String()[:min(200, w.Body.Len())])
		}
		if strings.Contains(w.Body.String(), pw) {
			t.Errorf("%s: the answer echoes the password", tc.name)
		}
	}
	if users, err := f.store.ListUsers(t.Context()); err != nil || len(users) != 0 {
		t.Fatalf("users after refused requests: %d, %v", len(users), err)
	}
	if f.trail.Len() != 0 {
		t.Fatalf("audit events for refused requests: %s", f.trail)
	}
}
