package admin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The admin API refuses ambiguous bodies (handler.go: "{...}{...}" is
// ambiguous), as /auth/ does for duplicate members (FG3, readInput refuses a
// key given twice). A member given twice, or in another case
// ("EMAIL", "Invite"), is just as ambiguous: encoding/json silently takes the
// last one and matches keys case-insensitively, so a proxy, a log or an
// approval step that reads the first "email" sees another user than the one
// created, and `"invite":true,"Invite":false` flips the request. None of
// these may create anything.
func TestHandlerRefusesDuplicateMembers(t *testing.T) {
	f := newFixture(t)
	h := NewHandler(f.svc, nil)
	for _, tc := range []struct{ name, body string }{
		{"email twice", `{"email":"ann@example.com","email":"mallory@example.com","password":"a long password"}`},
		{"email in another case", `{"email":"ann@example.com","EMAIL":"mallory@example.com","password":"a long password"}`},
		{"invite then Invite", `{"email":"ann@example.com","invite":true,"Invite":false,"password":"a long password"}`},
	} {
		r := httptest.NewRequest(http.MethodPost, "/v1/users", strings.NewReader(tc.body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400 (%s)", tc.name, w.Code, strings.TrimSpace(w.Body.String()))
		}
	}
	if users, err := f.store.ListUsers(t.Context()); err != nil || len(users) != 0 {
		t.Errorf("users created from ambiguous bodies: %d (%v)", len(users), err)
	}
}
