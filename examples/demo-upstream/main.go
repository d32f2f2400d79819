// Command demo-upstream is a tiny web app to put behind Gatehouse in the
// examples and in `make run`. It greets the signed-in user by the
// X-Forwarded-Email header that Gatehouse adds, lists every X-Forwarded-*
// header it received and offers a sign-out button that posts to /auth/logout.
//
// It trusts those headers blindly, as an app behind Gatehouse may: it must
// listen where only Gatehouse can reach it (the default is loopback).
//
// Dependencies: standard library only; it imports no Gatehouse package.
package main

import (
	"flag"
	"html/template"
	"log"
	"net"
	"net/http"
	"slices"
	"strings"
)

const pageHTML = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><title>Demo app</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2rem; background: #fff; color: #1a1a1a; }
th, td { padding: 0.2rem 0.8rem 0.2rem 0; vertical-align: top; }
td { font-family: ui-monospace, monospace; word-break: break-all; }
@media (prefers-color-scheme: dark) {
  body { background: #16181d; color: #e6e6e6; }
  button { background: #2b2f38; color: #e6e6e6; border: 1px solid #4a505c; }
}
</style></head>
<body>
<h1>Hello, {{if .Email}}{{.Email}}{{else}}stranger{{end}}</h1>
<p>This page comes from the demo upstream app. Headers received from Gatehouse:</p>
<table>
{{range .Headers}}<tr><th align="left">{{.Name}}</th><td>{{.Value}}</td></tr>
{{else}}<tr><td>none: this request did not come through Gatehouse</td></tr>
{{end}}</table>
<form method="post" action="/auth/logout"><button type="submit">Sign out</button></form>
</body>
</html>
`

type header struct{ Name, Value string }

// forwarded returns the X-Forwarded-* headers of h, sorted by name.
func forwarded(h http.Header) []header {
	var out []header
	for name, values := range h {
		if strings.HasPrefix(name, "X-Forwarded-") {
			out = append(out, header{name, strings.Join(values, ", ")})
		}
	}
	slices.SortFunc(out, func(a, b header) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func main() {
	listen := flag.String("listen", "127.0.0.1:3000", "address to listen on")
	flag.Parse()
	page := template.Must(template.New("page").Parse(pageHTML))

	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		data := struct {
			Email   string
			Headers []header
		}{r.Header.Get("X-Forwarded-Email"), forwarded(r.Header)}
		if err := page.Execute(w, data); err != nil {
			log.Printf("render: %v", err)
		}
	})
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("demo-upstream listening on http://%s", ln.Addr())
	log.Fatal(http.Serve(ln, nil))
}
