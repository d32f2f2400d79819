package authflows

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

//go:embed pages/*.html pages/style.css
var pageFS embed.FS

// pages holds one template per page, each parsed with the shared layout.
type pages struct {
	byName map[string]*template.Template
	style  []byte
}

// loadPages parses pages/layout.html with every other pages/*.html file. A
// page file defines "title" and "content".
func loadPages() (*pages, error) {
	p := &pages{byName: map[string]*template.Template{}}
	var err error
	if p.style, err = pageFS.ReadFile("pages/style.css"); err != nil {
		return nil, err
	}
	files, err := fs.Glob(pageFS, "pages/*.html")
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.ParseFS(pageFS, "pages/layout.html", f)
		if err != nil {
			return nil, fmt.Errorf("page %s: %w", name, err)
		}
		p.byName[name] = t
	}
	return p, nil
}

// render writes the named page with status. Pages carry a strict CSP (no
// scripts, no inline styles) and are never framed or cached.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	t, ok := h.pages.byName[name]
	if !ok {
		panic("authflows: no page " + name)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", data); err != nil {
		h.log.ErrorContext(r.Context(), "render page", "page", name, "err", err)
		web.WriteProblem(w, r, errInternal)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("Content-Security-Policy", web.PageCSP)
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// serveStyle serves the stylesheet. Like every answer under /auth/ it is
// not cacheable (the contract's rule; the file is small).
func (h *Handler) serveStyle(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	_, _ = w.Write(h.pages.style)
}
