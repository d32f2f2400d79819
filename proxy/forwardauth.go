package proxy

import (
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// The check endpoints give a proxy the user already runs (nginx, Traefik,
// Caddy) Gatehouse's decision on a request it holds (FA1). They answer only
// peers in Config.ForwardAuthTrusted, refuse any missing, duplicated or
// malformed forwarded header with 400, clean the original path exactly as
// the proxy does, and answer the proxy's own decision (decide) on it: 200
// only for a signed-in session or a public route.
const (
	// ForwardAuthPath serves Traefik ForwardAuth and Caddy forward_auth:
	// X-Forwarded-Method, -Proto, -Host and -Uri describe the request.
	ForwardAuthPath = "/auth/check/forward-auth"
	// AuthRequestPath serves nginx auth_request: X-Original-Method and an
	// absolute X-Original-URL describe the request.
	AuthRequestPath = "/auth/check/auth-request"
)

var (
	forbiddenPeer     = web.NewProblem(http.StatusForbidden, "forbidden", "Not a trusted forward-auth peer")
	badForwardRequest = web.NewProblem(http.StatusBadRequest, "invalid_forwarded_request", "Missing, duplicated or malformed forwarded header")
)

// maxForwardedValue bounds each forwarded header a check reads.
const maxForwardedValue = 8 << 10

// originalRequest is the request a check endpoint is asked about.
type originalRequest struct {
	method string
	scheme string
	host   string
	path   string // decoded and cleaned, as the proxy cleans it
	query  string // raw
	// ambiguous: the decoded path before cleaning is one that an upstream
	// could read otherwise (see ambiguous); the upstream gets it as is.
	ambiguous bool
}

// url is the original request's absolute address, with the cleaned path.
func (o originalRequest) url() string {
	u := url.URL{Scheme: o.scheme, Host: o.host, Path: o.path, RawQuery: o.query}
	return u.String()
}

// isCheckPath reports whether r asks for a check endpoint, spelled exactly.
func isCheckPath(r *http.Request) bool {
	p := r.URL.Path
	return (p == ForwardAuthPath || p == AuthRequestPath) && r.URL.RawPath == "" && r.URL.Opaque == ""
}

// serveCheck answers a check endpoint. It runs before the client headers
// are removed: the forwarded headers are its input.
func (p *Proxy) serveCheck(w http.ResponseWriter, r *http.Request) {
	web.NoStore(w.Header())
	if !p.checkPeers.Contains(web.PeerAddr(r.RemoteAddr)) {
		web.WriteProblem(w, r, forbiddenPeer)
		return
	}
	var (
		orig originalRequest
		err  error
	)
	if r.URL.Path == ForwardAuthPath {
		orig, err = forwardAuthRequest(r.Header)
	} else {
		orig, err = authRequestRequest(r.Header)
	}
	if err != nil {
		p.logger.LogAttrs(r.Context(), slog.LevelWarn, "forward-auth: refused forwarded headers",
			slog.String("endpoint", r.URL.Path), slog.String("reason", err.Error()))
		web.WriteProblem(w, r, badForwardRequest)
		return
	}

	// The same decision as the proxy's, on the original method, host and
	// cleaned path; the credentials are the cookies the check carries.
	d := p.decide(r, target{method: orig.method, host: orig.host, path: orig.path, rawAmbiguous: orig.ambiguous})
	switch d.verdict {
	case verdictUnavailable:
		p.logger.LogAttrs(r.Context(), slog.LevelError, unavailableMessage(d),
			slog.String("endpoint", r.URL.Path), slog.String("error", d.err.Error()))
		web.WriteProblem(w, r, storeUnavailable)
	case verdictDenied:
		p.metrics.refused.Inc()
		p.refuse(w, r, d)
	case verdictReauth:
		login := p.reauthURL(orig.url(), d.reauth)
		if r.URL.Path == AuthRequestPath {
			w.Header().Set("Location", login) // nginx turns the 401 into a redirect with it
		}
		writeReauth(w, r, login)
	case verdictSignIn:
		login := web.Denier{BaseURL: p.baseURL}.LoginURL(orig.url())
		browser := (orig.method == http.MethodGet || orig.method == http.MethodHead) && web.WantsHTML(r)
		if r.URL.Path == ForwardAuthPath && browser {
			http.Redirect(w, r, login, http.StatusFound)
			return
		}
		if r.URL.Path == AuthRequestPath {
			w.Header().Set("Location", login) // nginx turns the 401 into a redirect with it
		}
		w.Header().Set("WWW-Authenticate", `Cookie realm="gatehouse", form="/auth/login"`)
		web.WriteProblem(w, r, web.Unauthenticated)
	default:
		p.allow(w, r, d)
	}
}

// allow answers a check that passes: 200. Every 200 names every identity
// header, empty when nobody is signed in, so that a fronting proxy that
// copies them always overwrites the client's copies (Caddy
// GHSA-7r4p-vjf4-gxv4) and never leaves a placeholder for a missing one
// (Caddy before 2.7).
func (p *Proxy) allow(w http.ResponseWriter, r *http.Request, d decision) {
	user, email, groups, token := "", "", "", ""
	if d.signedIn {
		s := d.session
		user, email, groups = s.UserID, s.Email, s.Groups
		if p.assertions != nil {
			var err error
			if token, err = p.assertions.Token(s); err != nil { // fail closed, as without a store
				p.logger.LogAttrs(r.Context(), slog.LevelError, "identity assertion failed", slog.String("error", err.Error()))
				web.WriteProblem(w, r, storeUnavailable)
				return
			}
		}
	}
	h := w.Header()
	h["X-Forwarded-User"] = []string{user}
	h["X-Forwarded-Email"] = []string{email}
	h["X-Forwarded-Groups"] = []string{groups}
	h[AssertionHeader] = []string{token}
	w.WriteHeader(http.StatusOK)
}

// forwardAuthRequest reads X-Forwarded-Method, -Proto, -Host and -Uri.
func forwardAuthRequest(h http.Header) (originalRequest, error) {
	var o originalRequest
	var err error
	if o.method, err = methodHeader(h, "x-forwarded-method"); err != nil {
		return o, err
	}
	proto, err := single(h, "x-forwarded-proto")
	if err != nil {
		return o, err
	}
	switch proto {
	case "http", "https":
		o.scheme = proto
	default:
		return o, errors.New("X-Forwarded-Proto is neither http nor https")
	}
	if o.host, err = single(h, "x-forwarded-host"); err != nil {
		return o, err
	}
	if !validHost(o.host) {
		return o, errors.New("X-Forwarded-Host is not a host")
	}
	uri, err := single(h, "x-forwarded-uri")
	if err != nil {
		return o, err
	}
	if uri == "" || uri[0] != '/' || strings.IndexByte(uri, '#') >= 0 {
		return o, errors.New("X-Forwarded-Uri is not an origin-form request target")
	}
	u, err := url.ParseRequestURI(uri)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" {
		return o, errors.New("X-Forwarded-Uri does not parse")
	}
	o.path, o.query, o.ambiguous = cleanPath(u.Path), u.RawQuery, ambiguous(u.Path)
	return o, nil
}

// authRequestRequest reads X-Original-Method and the absolute X-Original-URL.
func authRequestRequest(h http.Header) (originalRequest, error) {
	var o originalRequest
	var err error
	if o.method, err = methodHeader(h, "x-original-method"); err != nil {
		return o, err
	}
	raw, err := single(h, "x-original-url")
	if err != nil {
		return o, err
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return o, errors.New("X-Original-URL does not parse")
	case u.Scheme != "http" && u.Scheme != "https":
		return o, errors.New("X-Original-URL is not an absolute http(s) URL")
	case u.User != nil || u.Opaque != "" || u.Fragment != "" || strings.IndexByte(raw, '#') >= 0:
		return o, errors.New("X-Original-URL has user info, an opaque part or a fragment")
	case !validHost(u.Host):
		return o, errors.New("X-Original-URL has no valid host")
	case u.Path != "" && u.Path[0] != '/':
		return o, errors.New("X-Original-URL path is not absolute")
	}
	o.scheme, o.host = u.Scheme, u.Host
	o.path, o.query, o.ambiguous = cleanPath(u.Path), u.RawQuery, ambiguous(u.Path)
	return o, nil
}

// single returns the one value of a forwarded header. The header must come
// exactly once, under one spelling: a second line, or a second spelling
// ("X_Forwarded_Uri" beside "X-Forwarded-Uri"), is ambiguous, as is an
// empty, oversized or non-printable value.
func single(h http.Header, name string) (string, error) {
	var values []string
	spellings := 0
	for k, v := range h {
		if headerEqual(k, name) {
			spellings++
			values = v
		}
	}
	switch {
	case spellings == 0 || len(values) == 0:
		return "", errors.New(name + " missing")
	case spellings > 1 || len(values) > 1:
		return "", errors.New(name + " duplicated")
	}
	v := values[0]
	if v == "" || len(v) > maxForwardedValue {
		return "", errors.New(name + " empty or too long")
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c <= ' ' || c >= 0x7f {
			return "", errors.New(name + " has a control, space or non-ASCII byte")
		}
	}
	return v, nil
}

// methodHeader reads a method name: upper-case letters only.
func methodHeader(h http.Header, name string) (string, error) {
	m, err := single(h, name)
	if err != nil {
		return "", err
	}
	if len(m) > 16 {
		return "", errors.New(name + " is not a method")
	}
	for i := 0; i < len(m); i++ {
		if m[i] < 'A' || m[i] > 'Z' {
			return "", errors.New(name + " is not a method")
		}
	}
	return m, nil
}

// validHost accepts "name", "name:port", "1.2.3.4:port" and "[v6]:port",
// nothing with user info, a path, a comma or other stray characters.
func validHost(host string) bool {
	if host == "" || len(host) > 261 {
		return false
	}
	u, err := url.Parse("http://" + host)
	if err != nil || u.Host != host || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Hostname() == "" {
		return false
	}
	name := u.Hostname()
	if strings.Contains(host, "[") { // IPv6 literal, checked by url.Parse
		return true
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	if port := u.Port(); port != "" {
		for i := 0; i < len(port); i++ {
			if port[i] < '0' || port[i] > '9' {
				return false
			}
		}
	} else if strings.HasSuffix(host, ":") {
		return false
	}
	return true
}
