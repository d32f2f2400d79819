package provider

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// nextLink reads rel="next" of a Link header and nothing else.
func TestNextLink(t *testing.T) {
	tests := map[string]string{
		`<https://api.github.com/user/orgs?page=2>; rel="next", <https://api.github.com/user/orgs?page=5>; rel="last"`:  "https://api.github.com/user/orgs?page=2",
		`<https://api.github.com/user/orgs?page=1>; rel="prev", <https://api.github.com/user/orgs?page=1>; rel="first"`: "",
		`<https://a/x?page=3>; rel="last next"`: "https://a/x?page=3",
		``:                                      "",
		`garbage`:                               "",
	}
	for header, want := range tests {
		if got := nextLink(header); got != want {
			t.Errorf("nextLink(%q) = %q, want %q", header, got, want)
		}
	}
}

// The access token follows a Link rel="next" only on the API's own origin.
func TestGitHubPagesStayOnTheAPIHost(t *testing.T) {
	var seen []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("Authorization"))
		w.Header().Set("Link", `<https://elsewhere.example/user/orgs?page=2>; rel="next"`)
		_, _ = w.Write([]byte(`[{"login":"acme"}]`))
	}))
	defer api.Close()
	g := &githubIdentifier{apiURL: api.URL, client: api.Client(), orgs: []string{"acme"}}
	_, err := g.groups(t.Context(), apiCall{client: api.Client(), accessToken: "tok"})
	if err == nil || !strings.Contains(err.Error(), "another host") {
		t.Errorf("err = %v, want a refusal of the foreign next page", err)
	}
	if len(seen) != 1 {
		t.Errorf("%d requests, want only the first page", len(seen))
	}
}
