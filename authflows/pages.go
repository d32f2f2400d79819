package authflows

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
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
// page file defines "title" and "content", and may define "head". A file of
// the same name in dir (--templates-dir), when dir is set, replaces the
// embedded one; a page file there that is not one of the embedded names is
// an error, and so is one that does not parse, naming the file. appName is
// what {{appName}} writes.
func loadPages(dir, appName string) (*pages, error) {
	p := &pages{byName: map[string]*template.Template{}}
	var err error
	if p.style, err = readPageFile(dir, "style.css"); err != nil {
		return nil, err
	}
	files, err := fs.Glob(pageFS, "pages/*.html")
	if err != nil {
		return nil, err
	}
	var known []string
	for _, f := range files {
		known = append(known, path.Base(f))
	}
	if dir != "" {
		if err := checkPageDir(dir, known); err != nil {
			return nil, err
		}
	}
	funcs := template.FuncMap{"appName": func() string { return appName }}
	layout, err := readPageFile(dir, "layout.html")
	if err != nil {
		return nil, err
	}
	for _, file := range known {
		name := strings.TrimSuffix(file, ".html")
		if name == "layout" {
			continue
		}
		src, err := readPageFile(dir, file)
		if err != nil {
			return nil, err
		}
		t, err := template.New("layout.html").Funcs(funcs).Parse(string(layout))
		if err != nil {
			return nil, fmt.Errorf("page template %s: %w", pageSource(dir, "layout.html"), err)
		}
		if _, err := t.New(file).Parse(string(src)); err != nil {
			return nil, fmt.Errorf("page template %s: %w", pageSource(dir, file), err)
		}
		if t.Lookup("layout") == nil || t.Lookup("content") == nil {
			return nil, fmt.Errorf("page template %s: defines no \"content\" (or the layout no \"layout\")", pageSource(dir, file))
		}
		p.byName[name] = t
	}
	return p, nil
}

// readPageFile reads name from dir when it holds it, else the embedded copy.
func readPageFile(dir, name string) ([]byte, error) {
	if dir != "" {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("page template: %w", err)
		}
	}
	return pageFS.ReadFile("pages/" + name)
}

// pageSource names where a page template came from, for start errors.
func pageSource(dir, name string) string {
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return filepath.Join(dir, name)
		}
	}
	return "pages/" + name + " (embedded)"
}

// checkPageDir refuses a missing directory and an unknown .html file in it.
func checkPageDir(dir string, known []string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("templates: %w", err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".html") && !slices.Contains(known, e.Name()) {
			return fmt.Errorf("templates: unknown page file %s in %s (known: %s)", e.Name(), dir, strings.Join(known, ", "))
		}
	}
	return nil
}

// render writes the named page with status. Pages carry a strict CSP (no
// inline scripts or styles; only the second factor's pages load a script,
// pageCSP) and are never framed or cached.
func (h *core) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
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
	hdr.Set("Content-Security-Policy", pageCSP(name))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// problem answers p: for a browser the error page (pages/error.html, which
// --templates-dir may replace), otherwise problem+json.
func (h *core) problem(w http.ResponseWriter, r *http.Request, p web.Problem) {
	if !web.WantsHTML(r) {
		web.WriteProblem(w, r, p)
		return
	}
	web.NoStore(w.Header())
	h.render(w, r, p.Status, "error", errorPage{ErrorPageData: web.ErrorPageData{Problem: p, Help: web.HelpFor(r, p), AppName: h.cfg.AppName}})
}

// errorPage is what pages/error.html gets: the problem and its help, and
// for a provider sign-in refused (no account, not allowed) who the
// provider said the person is, so that someone signed in there as another
// account sees it.
type errorPage struct {
	web.ErrorPageData
	Provider string // the provider's title; "" outside a provider sign-in
	Account  string // the email the provider vouched for, else its login there; "" when none
}

// refusedAt answers a provider sign-in refused with p: for a browser the
// error page naming the account the provider reported (an email it
// vouched for, or its login there), otherwise problem+json.
func (h *core) refusedAt(w http.ResponseWriter, r *http.Request, p web.Problem, providerTitle, account string) {
	if !web.WantsHTML(r) {
		web.WriteProblem(w, r, p)
		return
	}
	web.NoStore(w.Header())
	h.render(w, r, p.Status, "error", errorPage{
		ErrorPageData: web.ErrorPageData{Problem: p, Help: web.HelpFor(r, p), AppName: h.cfg.AppName},
		Provider:      providerTitle, Account: account,
	})
}

// serveStyle serves the stylesheet. Like every answer under /auth/ it is
// not cacheable (the contract's rule; the file is small).
func (h *Handler) serveStyle(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	_, _ = w.Write(h.pages.style)
}

// CheckTemplates parses every page and mail template with the overrides of
// dir, as New will, and names the file that is unknown or does not parse.
func CheckTemplates(dir string) error {
	if _, err := loadPages(dir, "check"); err != nil {
		return err
	}
	_, err := loadMailTemplates(dir)
	return err
}
