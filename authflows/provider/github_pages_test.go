package provider

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// The access token never leaves the API's origin while memberships are
// read: a rel="next" that names another host in any spelling (scheme
// relative, user info, fragment, another port, another scheme) is refused
// before it is requested, and a redirect to another host does not carry
// the Authorization header. Either way the sign-in fails closed.
func TestGitHubPagesTokenStaysHome(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.Method+" "+r.URL.String()+" auth="+r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = w.Write([]byte(`[{"login":"acme"}]`))
	}))
	defer elsewhere.Close()
	other := strings.TrimPrefix(elsewhere.URL, "http://")
	var link string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("page") == "" && strings.HasPrefix(link, "redirect:") {
			http.Redirect(w, r, strings.TrimPrefix(link, "redirect:"), http.StatusFound)
			return
		}
		w.Header().Set("Link", "<"+link+`>; rel="next"`)
		_, _ = w.Write([]byte(`[{"login":"other"}]`))
	}))
	defer api.Close()
	self := strings.TrimPrefix(api.URL, "http://")
	for _, l := range []string{
		"http://" + other + "/user/orgs?page=2",
		"//" + other + "/user/orgs?page=2",
		"http://" + self + "@" + other + "/user/orgs?page=2",
		"http://" + other + "#@" + self + "/user/orgs?page=2",
		"https://" + self + "/user/orgs?page=2",
		"http://" + strings.Replace(self, "127.0.0.1", "localhost", 1) + "/user/orgs?page=2",
		"/user/orgs?page=2",
		"redirect:" + elsewhere.URL + "/user/orgs",
	} {
		link = l
		g := &githubIdentifier{apiURL: api.URL, client: api.Client(), orgs: []string{"acme"}}
		groups, err := g.groups(t.Context(), apiCall{client: api.Client(), accessToken: "secret-token"})
		mu.Lock()
		for _, req := range leaked {
			if strings.Contains(req, "secret-token") {
				t.Errorf("Link %q: the token reached another host: %s", l, req)
			}
		}
		leaked = nil
		mu.Unlock()
		if err == nil && len(groups) > 0 {
			t.Errorf("Link %q: groups %q from another host", l, groups)
		}
	}
}
