package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/gatehouse-auth/gatehouse/proxy/session"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// Forwarding. Every request that goes on to the upstream, WebSocket
// handshakes included, goes through one httputil.ReverseProxy (p.reverse):
// rewrite builds the upstream request (headers.go), guardResponse and
// answerWriter keep the upstream from touching Gatehouse's cookies, and
// upstreamError (transport.go) answers a failed round trip.

// identity is who a forwarded request comes from. forward puts it in the
// request's context for rewrite; a request without one is forwarded as
// from nobody.
type identity struct {
	userID, email, groups string
	assertion             string // the signed identity assertion, when enabled
	// dropAuthorization: the route takes bearer credentials, which stop
	// here; the upstream gets no Authorization header.
	dropAuthorization bool
}

type identityKey struct{}

func identityOf(ctx context.Context) *identity {
	id, _ := ctx.Value(identityKey{}).(*identity)
	return id
}

// forward sends r to the upstream, with the identity of d's session when it
// counts, and reports what became of it.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, d decision) outcome {
	if d.signedIn {
		s := d.session
		id := &identity{userID: s.UserID, email: s.Email, groups: s.Groups, dropAuthorization: d.tokens}
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
		r = r.WithContext(context.WithValue(r.Context(), identityKey{}, id))
	}
	aw := answerWriters.Get().(*answerWriter)
	aw.ResponseWriter, aw.cookies, aw.failed = w, p.ownCookies, false
	p.reverse.ServeHTTP(aw, r)
	failed := aw.failed
	aw.ResponseWriter = nil
	answerWriters.Put(aw)
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

var answerWriters = sync.Pool{New: func() any { return new(answerWriter) }}

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
func (p *Proxy) guardResponse(res *http.Response) error {
	session.DropSetCookies(res.Header, p.ownCookies...)
	// A 101's body is the connection itself, which ReverseProxy takes
	// over as it is; it has no trailers.
	if res.StatusCode != http.StatusSwitchingProtocols && res.Body != nil && res.Body != http.NoBody {
		res.Body = &guardedBody{ReadCloser: res.Body, p: p, res: res}
	}
	return nil
}

// guardedBody is an upstream answer's body as ReverseProxy copies it.
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
