package oauthtest

import (
	"encoding/json"
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
}

// NewGitHub starts a fake GitHub for client; close it when done.
func NewGitHub(client Client, now func() time.Time) *GitHub {
	g := &GitHub{server: newServer(client, now)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login/oauth/authorize", g.handleAuthorize([]string{"read:user", "user:email"}, false))
	mux.HandleFunc("POST /login/oauth/access_token", g.handleToken)
	mux.HandleFunc("GET /api/v3/user", g.handleUser)
	mux.HandleFunc("GET /api/v3/user/emails", g.handleEmails)
	g.srv = httptest.NewServer(mux)
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
	if err != nil {
		answer(url.Values{"error": {code}, "error_description": {err.Error()}})
		return
	}
	answer(url.Values{"access_token": {g.issueToken(gr.account)}, "token_type": {"bearer"}, "scope": {strings.ReplaceAll(gr.scope, " ", ",")}})
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
