package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"

	"github.com/gatehouse-auth/gatehouse/proxy/session"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// Forwarding. Every request that goes on to the upstream, WebSocket
// handshakes included, goes through httputil.ReverseProxy, configured once
// in p.reverse: rewrite builds the upstream request (headers.go),
// guardResponse and answerWriter keep the upstream from touching
// Gatehouse's cookies, and upstreamError (transport.go) answers a failed
// round trip.

// identity is who a forwarded request comes from.
type identity struct {
	userID, email, groups string
	assertion             string // the signed identity assertion, when enabled
	// dropAuthorization: the route takes bearer credentials, which stop
	// here; the upstream gets no Authorization header.
	dropAuthorization bool
}

// forwarding is one request's trip through the ReverseProxy: what its
// Rewrite and ModifyResponse need to know about that request, and the
// writer and body wrappers they use. Each forwarding has its own copy of
// p.reverse with Rewrite and ModifyResponse bound to it, so that the
// identity reaches rewrite without a context value or a copy of the
// request; forwardings are pooled (p.forwardings) and reused one request
// at a time.
type forwarding struct {
	p       *Proxy
	reverse httputil.ReverseProxy
	id      identity
	// signedIn: id is the request's identity; else it goes as from nobody.
	signedIn bool
	answer   answerWriter
	body     guardedBody
}

func (p *Proxy) newForwarding() *forwarding {
	f := &forwarding{p: p, reverse: *p.reverse}
	f.reverse.Rewrite = f.rewrite
	f.reverse.ModifyResponse = f.guardResponse
	f.answer.cookies = p.ownCookies
	return f
}

// identity is the identity rewrite sends: nil for nobody.
func (f *forwarding) identity() *identity {
	if !f.signedIn {
		return nil
	}
	return &f.id
}

// forward sends r to the upstream, with the identity of d's session when it
// counts, and reports what became of it.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, d decision) outcome {
	var id identity
	if d.signedIn {
		s := d.session
		id = identity{userID: s.UserID, email: s.Email, groups: s.Groups, dropAuthorization: d.tokens}
		if p.assertions != nil {
			token, err := p.assertions.Token(s)
			if err != nil { // no signing key: fail closed, as without a store
				p.metrics.failed.Inc()
				p.logger.LogAttrs(r.Context(), slog.LevelError, "identity assertion failed",
					slog.String("request_id", requestID(r)), slog.String("error", err.Error()))
				web.WriteProblem(w, r, storeUnavailable)
				return outcomeError
			}
			id.assertion = token
		}
	}
	f := p.forwardings.Get().(*forwarding)
	f.id, f.signedIn = id, d.signedIn
	f.answer.ResponseWriter, f.answer.failed = w, false
	// A panic (http.ErrAbortHandler, an answer cut short) leaves f to the
	// garbage collector.
	f.reverse.ServeHTTP(&f.answer, r)
	failed := f.answer.failed
	f.id, f.answer.ResponseWriter, f.body = identity{}, nil, guardedBody{}
	p.forwardings.Put(f)
	switch {
	case failed:
		p.metrics.failed.Inc()
		return outcomeError
	case d.public:
		p.metrics.public.Inc()
		return outcomePublic
	default:
		p.metrics.forwarded.Inc()
		return outcomeForwarded
	}
}

// answerWriter is the writer ReverseProxy answers through. ReverseProxy
// writes the informational (1xx) answers the upstream sends before its
// final one straight to it; those lose the Set-Cookie lines of Gatehouse's
// cookies here, as the final answer does in guardResponse (SS8). The
// ErrorHandler marks it failed, for the metrics.
type answerWriter struct {
	http.ResponseWriter
	cookies []string
	failed  bool
}

func (w *answerWriter) WriteHeader(code int) {
	if code < http.StatusOK {
		session.DropSetCookies(w.Header(), w.cookies...)
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach Flush and Hijack, which
// streaming answers and the WebSocket 101 need.
func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// guardResponse is ReverseProxy's ModifyResponse, the one place where the
// upstream's answer is checked: it can neither set nor clear a Gatehouse
// cookie (SS8), in the header (a 101's included) or in the trailers, which
// the transport fills in only when the body ends, so they are filtered when
// ReverseProxy closes the body, before it copies them.
func (f *forwarding) guardResponse(res *http.Response) error {
	session.DropSetCookies(res.Header, f.p.ownCookies...)
	// A 101's body is the connection itself, which ReverseProxy takes
	// over as it is; it has no trailers.
	if res.StatusCode != http.StatusSwitchingProtocols && res.Body != nil && res.Body != http.NoBody {
		f.body = guardedBody{ReadCloser: res.Body, p: f.p, res: res}
		res.Body = &f.body
	}
	return nil
}

// guardedBody is an upstream answer's body as ReverseProxy copies it, which
// closes it before ServeHTTP returns.
type guardedBody struct {
	io.ReadCloser
	p      *Proxy
	res    *http.Response
	logged bool
}

// Read logs a body that breaks off: ReverseProxy then aborts the answer, so
// the client sees a broken connection, never a short body that looks
// complete.
func (b *guardedBody) Read(buf []byte) (int, error) {
	n, err := b.ReadCloser.Read(buf)
	if err != nil && err != io.EOF && !b.logged {
		b.logged = true
		r := b.res.Request
		level := slog.LevelWarn
		if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
			level = slog.LevelDebug // the client went away
		}
		b.p.logger.LogAttrs(r.Context(), level, "upstream answer cut short",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.String("request_id", requestID(r)), slog.String("error", err.Error()))
	}
	return n, err
}

func (b *guardedBody) Close() error {
	err := b.ReadCloser.Close()
	session.DropSetCookies(b.res.Trailer, b.p.ownCookies...)
	return err
}
