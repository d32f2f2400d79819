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
	AppName string   // --app-name, on the access-denied page
}

// Unauthenticated is the problem answered with 401.
var Unauthenticated = NewProblem(http.StatusUnauthorized, "unauthenticated", "Sign-in required")

// LoginHeader carries the sign-in address on a 401 in redirect mode, for
// scripts that cannot follow a redirect to an HTML page.
const LoginHeader = "X-Gatehouse-Login"

// Deny answers r, whose URL must already carry the cleaned path: a 302 to
// {base-url}/auth/login?rd=<path and query> for a top-level GET or HEAD
// navigation in redirect mode, otherwise 401 with WWW-Authenticate; in
// redirect mode that 401 names the sign-in address in X-Gatehouse-Login.
// Neither answer is cacheable.
func (d Denier) Deny(w http.ResponseWriter, r *http.Request) {
	if d.Mode == ModeRedirect {
		login := d.LoginURL(r.URL.RequestURI())
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && IsNavigation(r) {
			NoStore(w.Header())
			http.Redirect(w, r, login, http.StatusFound)
			return
		}
		w.Header().Set(LoginHeader, login)
		p := Unauthenticated
		p.ActionURL = login
		w.Header().Set("WWW-Authenticate", `Cookie realm="gatehouse", form="/auth/login"`)
		WriteProblem(w, r, p)
		return
	}
	w.Header().Set("WWW-Authenticate", `Cookie realm="gatehouse", form="/auth/login"`)
	WriteProblem(w, r, Unauthenticated)
}

// IsNavigation reports whether r looks like a top-level navigation that can
// follow a redirect to an HTML page: not when Sec-Fetch-Mode is present and
// not "navigate" (fetch, XHR, images, scripts), not when Accept prefers JSON
// over HTML, not when X-Requested-With is present (jQuery and friends).
func IsNavigation(r *http.Request) bool {
	if m := r.Header.Get("Sec-Fetch-Mode"); m != "" && m != "navigate" {
		return false
	}
	if r.Header.Get("X-Requested-With") != "" {
		return false
	}
	htmlQ, jsonQ := acceptQ(r)
	return !(jsonQ > 0 && jsonQ > htmlQ)
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
