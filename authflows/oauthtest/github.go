package oauthtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// GitHub is a GitHub-like OAuth provider: authorize, access_token (form
// encoded unless JSON is asked for, errors as 200 with an error field, as
// GitHub does), and the API's GET /user (numeric id) and GET /user/emails.
type GitHub struct {
	*server
	dropScope string            // scope the next token is granted without
	granted   map[string]string // access token → granted scopes (comma separated)
	pageSize  int               // entries per page of /user/orgs and /user/teams
}

// NewGitHub starts a fake GitHub for client; close it when done.
func NewGitHub(client Client, now func() time.Time) *GitHub {
	g := &GitHub{server: newServer(client, now), granted: map[string]string{}, pageSize: 2}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login/oauth/authorize", g.handleAuthorize([]string{"read:user", "user:email"}, false, "read:org"))
	mux.HandleFunc("GET /api/v3/user/orgs", g.handleOrgs)
	mux.HandleFunc("GET /api/v3/user/teams", g.handleTeams)
	mux.HandleFunc("POST /login/oauth/access_token", g.handleToken)
	mux.HandleFunc("GET /api/v3/user", g.handleUser)
	mux.HandleFunc("GET /api/v3/user/emails", g.handleEmails)
	g.srv = httptest.NewServer(g.hangable(mux))
	return g
}

// AuthURL, TokenURL and APIURL are the fake's endpoints (GitHub Enterprise
// layout: the API under /api/v3).
func (g *GitHub) AuthURL() string  { return g.srv.URL + "/login/oauth/authorize" }
func (g *GitHub) TokenURL() string { return g.srv.URL + "/login/oauth/access_token" }
func (g *GitHub) APIURL() string   { return g.srv.URL + "/api/v3" }

func (g *GitHub) handleToken(w http.ResponseWriter, r *http.Request) {
	answer := func(v url.Values) {
		if strings.Contains(r.Header.Get("Accept"), "json") {
			m := map[string]string{}
			for k := range v {
				m[k] = v.Get(k)
			}
			writeJSON(w, http.StatusOK, m)
			return
		}
		w.Header().Set("Content-Type", "application/x-www-form-urlencoded")
		_, _ = w.Write([]byte(v.Encode()))
	}
	gr, code, err := g.redeem(r)
	if err == nil && code != "" {
		code, err = "unsupported_grant_type", fmt.Errorf("GitHub tokens do not expire: no %s grant", code)
	}
	if err != nil {
		answer(url.Values{"error": {code}, "error_description": {err.Error()}})
		return
	}
	var scopes []string
	g.mu.Lock()
	for _, sc := range strings.Fields(gr.scope) {
		if sc != g.dropScope {
			scopes = append(scopes, sc)
		}
	}
	g.dropScope = ""
	g.mu.Unlock()
	token := g.issueToken(gr.account)
	g.mu.Lock()
	g.granted[token] = strings.Join(scopes, ",")
	g.mu.Unlock()
	answer(url.Values{"access_token": {token}, "token_type": {"bearer"}, "scope": {strings.Join(scopes, ",")}})
}

// GrantNextWithout makes the next token lack scope (as when the user or an
// organization's policy withholds it): the token response's scope omits
// it and the endpoints that need it answer 403.
func (g *GitHub) GrantNextWithout(scope string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.dropScope = scope
}

// handleOrgs is GET /user/orgs: the account's organizations, paginated.
// Without read:org it lists none, as GitHub lists only what the token may see.
func (g *GitHub) handleOrgs(w http.ResponseWriter, r *http.Request) {
	a, scopes, ok := g.account(w, r, "orgs")
	if !ok {
		return
	}
	var list []map[string]any
	if strings.Contains(scopes, "read:org") {
		for i, o := range a.Orgs {
			list = append(list, map[string]any{"login": o, "id": i + 1})
		}
	}
	g.page(w, r, list)
}

// handleTeams is GET /user/teams, paginated; 403 without read:org.
func (g *GitHub) handleTeams(w http.ResponseWriter, r *http.Request) {
	a, scopes, ok := g.account(w, r, "teams")
	if !ok {
		return
	}
	if !strings.Contains(scopes, "read:org") {
		writeJSON(w, http.StatusForbidden, map[string]string{"message": "Resource not accessible by integration"})
		return
	}
	var list []map[string]any
	for i, t := range a.Teams {
		org, slug, _ := strings.Cut(t, "/")
		list = append(list, map[string]any{"id": i + 1, "slug": slug, "name": slug, "organization": map[string]any{"login": org}})
	}
	g.page(w, r, list)
}

func (g *GitHub) account(w http.ResponseWriter, r *http.Request, endpoint string) (Account, string, bool) {
	if g.apiFailure(w, endpoint) {
		return Account{}, "", false
	}
	a, ok := g.bearer(r)
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return Account{}, "", false
	}
	t, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	g.mu.Lock()
	defer g.mu.Unlock()
	return a, g.granted[t], true
}

// page answers one page of list (?page=N, at most pageSize entries or
// per_page if smaller) with GitHub's Link header to the next one.
func (g *GitHub) page(w http.ResponseWriter, r *http.Request, list []map[string]any) {
	size := g.pageSize
	if n, err := strconv.Atoi(r.URL.Query().Get("per_page")); err == nil && n > 0 && n < size {
		size = n
	}
	page := 1
	if n, err := strconv.Atoi(r.URL.Query().Get("page")); err == nil && n > 0 {
		page = n
	}
	from := min((page-1)*size, len(list))
	to := min(from+size, len(list))
	if to < len(list) {
		next := *r.URL
		q := next.Query()
		q.Set("page", strconv.Itoa(page+1))
		next.RawQuery = q.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next", <%s%s>; rel="last"`, g.srv.URL, next.RequestURI(), g.srv.URL, next.Path))
	}
	out := list[from:to]
	if out == nil {
		out = []map[string]any{}
	}
	writeJSON(w, http.StatusOK, out)
}

func (g *GitHub) handleUser(w http.ResponseWriter, r *http.Request) {
	if g.apiFailure(w, "user") {
		return
	}
	a, ok := g.bearer(r)
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return
	}
	var id any = a.Subject
	if n, err := strconv.ParseInt(a.Subject, 10, 64); err == nil {
		id = json.Number(strconv.FormatInt(n, 10))
	}
	login := a.Login
	if login == "" {
		login = "user" + a.Subject
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "login": login, "type": "User", "email": nil})
}

// handleEmails lists the account's address as primary (verified as the test
// chose) and a verified, non-primary noreply address, which a client must
// not take for the user's email.
func (g *GitHub) handleEmails(w http.ResponseWriter, r *http.Request) {
	if g.apiFailure(w, "emails") {
		return
	}
	a, ok := g.bearer(r)
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return
	}
	emails := []map[string]any{
		{"email": a.Subject + "+noreply@users.noreply.github.com", "primary": false, "verified": true, "visibility": nil},
	}
	if a.Email != "" {
		emails = append(emails, map[string]any{"email": a.Email, "primary": true, "verified": a.EmailVerified, "visibility": "private"})
	}
	writeJSON(w, http.StatusOK, emails)
}
