package web

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

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

// A bearer credential refused on a tokens route (401 invalid_token) is not
// an expired emailed link, and a route that asks for a new sign-in or a
// second factor (reauthentication_required) says so and leads to the
// address that signs in again.
func TestErrorPageHelpBearerAndReauth(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/api/x", nil)
	bearer := HelpFor(r, NewProblem(http.StatusUnauthorized, "invalid_token", "Invalid, expired or revoked bearer token"))
	if bearer.Heading == "Link expired" || bearer.ActionURL == "/auth/forgot" || !strings.Contains(bearer.Next, "token") {
		t.Errorf("bearer invalid_token: help %+v", bearer)
	}
	link := HelpFor(r, NewProblem(http.StatusBadRequest, "invalid_token", "Invalid or expired reset token"))
	if link.Heading != "Link expired" || link.ActionURL != "/auth/forgot" {
		t.Errorf("link invalid_token: help %+v", link)
	}
	p := NewProblem(http.StatusUnauthorized, "reauthentication_required", "Sign in again to open this page")
	p.ActionURL = "/auth/login?rd=%2Fadmin&reauth=max-age"
	h := HelpFor(r, p)
	if h.Heading == p.Title || h.Next == "Go back and try again." || h.ActionURL != p.ActionURL || h.Action == "Go to the start" {
		t.Errorf("reauthentication_required: help %+v", h)
	}
}
