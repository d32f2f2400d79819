package web

import (
	"html/template"
	"net/http"
)

// Refusals of the access policy (CONTRACT "Access policy: who may get in").
var (
	// AccessDenied: signed in (or signing in), but the policy refuses the user.
	AccessDenied = NewProblem(http.StatusForbidden, "access_denied", "Your account is not allowed to use this application")
	// AccountDisabled: the credentials checked out, but the account is disabled.
	AccountDisabled = NewProblem(http.StatusForbidden, "account_disabled", "This account is disabled")
	// SignupClosed: no account exists for this sign-in and none is made.
	SignupClosed = NewProblem(http.StatusForbidden, "signup_closed", "There is no account for this sign-in, and new accounts are not open")
)

// AccessDenied answers a signed-in request that the policy refuses: 403
// access_denied, as a problem object, or for a browser a page with a
// sign-out button, so that the user can sign in as someone else. The page
// carries d.AppName in its title and above its heading, as the sign-in
// pages do.
func (d Denier) AccessDenied(w http.ResponseWriter, r *http.Request) {
	if !WantsHTML(r) {
		WriteProblem(w, r, AccessDenied)
		return
	}
	h := w.Header()
	NoStore(h)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", PageCSP)
	w.WriteHeader(AccessDenied.Status)
	_ = accessDeniedPage.Execute(w, ErrorPageData{Problem: AccessDenied, Help: HelpFor(r, AccessDenied), AppName: d.AppName})
}

// accessDeniedPage is laid out as authflows' pages/layout.html: a short
// title, the app's name, what happened and what to do, the code last.
var accessDeniedPage = template.Must(template.New("access_denied").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>{{.Help.Heading}}{{with .AppName}} · {{.}}{{end}}</title><link rel="stylesheet" href="/auth/assets/style.css"></head>
<body><main class="card">{{with .AppName}}<p class="app">{{.}}</p>{{end}}<h1>{{.Help.Heading}}</h1>
<p>You are signed in, but this account may not use {{with .AppName}}{{.}}{{else}}this application{{end}}. Sign out to use another account, or ask the people who run it for access.</p>
<form method="post" action="/auth/logout"><button type="submit">Sign out</button></form>
<p class="muted code">Error {{.Problem.Status}} · {{.Problem.Code}}</p></main></body></html>
`))
