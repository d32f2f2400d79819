package web

import (
	"net/http"
	"net/url"
)

// Mode selects what an unauthenticated request to a protected path gets.
type Mode string

const (
	// ModeRedirect sends GET and HEAD to the sign-in page, other methods get 401.
	ModeRedirect Mode = "redirect"
	// Mode401 answers 401 to every method.
	Mode401 Mode = "401"
)

// Denier answers requests that need a session and have none. The same
// allow/deny decision is made in both modes; only the answer differs.
type Denier struct {
	Mode    Mode
	BaseURL *url.URL // the only source of the absolute redirect address
}

// Unauthenticated is the problem answered with 401.
var Unauthenticated = NewProblem(http.StatusUnauthorized, "unauthenticated", "Sign-in required")

// Deny answers r, whose URL must already carry the cleaned path: a 302 to
// {base-url}/auth/login?rd=<path and query> for GET and HEAD in redirect
// mode, otherwise 401 with WWW-Authenticate. Neither answer is cacheable.
func (d Denier) Deny(w http.ResponseWriter, r *http.Request) {
	if d.Mode == ModeRedirect && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		NoStore(w.Header())
		http.Redirect(w, r, d.LoginURL(r.URL.RequestURI()), http.StatusFound)
		return
	}
	w.Header().Set("WWW-Authenticate", `Cookie realm="gatehouse", form="/auth/login"`)
	WriteProblem(w, r, Unauthenticated)
}

// LoginURL is the absolute sign-in address that returns to rd afterwards.
func (d Denier) LoginURL(rd string) string {
	u := *d.BaseURL
	u.Path = joinPath(u.Path, "/auth/login")
	u.RawPath = ""
	u.RawQuery = url.Values{"rd": {rd}}.Encode()
	u.Fragment = ""
	return u.String()
}

func joinPath(base, p string) string {
	for len(base) > 0 && base[len(base)-1] == '/' {
		base = base[:len(base)-1]
	}
	return base + p
}
