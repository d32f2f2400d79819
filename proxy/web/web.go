// Package web holds the HTTP answers that the proxy and the auth flows share:
// content negotiation (JSON or HTML), RFC 9457 problem objects, the
// unauthenticated answer chosen by --mode, the refusal pages, and the one
// reading of X-Forwarded-For behind trusted proxies (TrustedProxies.Walk,
// ClientIP).
//
// Dependencies: standard library only. proxy and authflows both import web;
// web imports neither.
package web

import (
	"encoding/json"
	"html/template"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// WantsHTML reports whether the answer should be a page rather than JSON: the
// request is an HTML form post, or its Accept header prefers text/html over
// JSON (by q-value, not by exact string).
func WantsHTML(r *http.Request) bool {
	if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil {
		if ct == "application/x-www-form-urlencoded" || ct == "multipart/form-data" {
			return true
		}
	}
	htmlQ, jsonQ := acceptQ(r)
	return htmlQ > 0 && htmlQ > jsonQ
}

func acceptQ(r *http.Request) (htmlQ, jsonQ float64) {
	htmlQ, jsonQ = -1.0, -1.0
	// Several Accept lines are one list (RFC 9110, 5.3).
	for _, accept := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(accept, ",") {
			mediaType, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if v, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					q = f
				}
			}
			switch mediaType {
			case "text/html", "application/xhtml+xml":
				htmlQ = max(htmlQ, q)
			case "application/json", "application/problem+json":
				jsonQ = max(jsonQ, q)
			}
		}
	}
	return htmlQ, jsonQ
}

// MaxAuthBody caps every request body under /auth/ (PX6). The proxy
// enforces it before the auth handler runs and the auth flows again on their
// own, so that either one mounted alone is still capped.
const MaxAuthBody = 16 << 10

// BodyTooLarge is the answer to a body over MaxAuthBody, declared by its
// Content-Length or found while reading a chunked one.
var BodyTooLarge = NewProblem(http.StatusRequestEntityTooLarge, "body_too_large", "Request body too large")

// NoStore marks an answer as not cacheable by browsers or shared caches.
func NoStore(h http.Header) {
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
}

// Problem is an RFC 9457 problem object with a stable Code member.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail,omitempty"`

	// ActionURL, when set, is where the error page's main button leads
	// instead of the code's usual action (e.g. sign in again with the same
	// rd). It is a local path or an address built from --base-url.
	ActionURL string `json:"-"`
}

// NewProblem returns a problem of type about:blank.
func NewProblem(status int, code, title string) Problem {
	return Problem{Type: "about:blank", Title: title, Status: status, Code: code}
}

// WriteProblem answers p as application/problem+json, or as an HTML error page
// with the same status when the request wants HTML. The answer is never cached.
func WriteProblem(w http.ResponseWriter, r *http.Request, p Problem) {
	h := w.Header()
	NoStore(h)
	h.Set("X-Content-Type-Options", "nosniff")
	if WantsHTML(r) {
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", PageCSP)
		w.WriteHeader(p.Status)
		_ = errorPage.Execute(w, ErrorPageData{Problem: p, Help: HelpFor(r, p)})
		return
	}
	h.Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// PageCSP is the Content-Security-Policy of every page Gatehouse serves: no
// scripts, styles only from /auth/assets, forms only to itself.
const PageCSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// ErrorPageData is what an error page template gets.
type ErrorPageData struct {
	Problem Problem
	Help    Help
	AppName string // set by authflows' overridable error page
}

var errorPage = template.Must(template.New("error").Parse(errorPageHTML))

// errorPageHTML is the error page: a short title, what happened and what to
// do, the action that fixes it, the status and code small and last.
const errorPageHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Help.Heading}}</title><link rel="stylesheet" href="/auth/assets/style.css"></head>
<body><main class="card"><h1>{{.Help.Heading}}</h1>
<p>{{.Problem.Title}}.</p>{{if .Problem.Detail}}<p>{{.Problem.Detail}}</p>{{end}}
<p>{{.Help.Next}}</p>
<a class="button" href="{{.Help.ActionURL}}">{{.Help.Action}}</a>
{{if .Help.Secondary}}<p><a href="{{.Help.SecondaryURL}}">{{.Help.Secondary}}</a></p>{{end}}
<p class="muted code">Error {{.Problem.Status}} · {{.Problem.Code}}</p></main></body></html>
`
