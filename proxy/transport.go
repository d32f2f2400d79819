package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// Upstream connection settings (PX8). The upstream is one host, usually in
// the same pod, so the idle pool is sized for the whole load rather than
// http.DefaultTransport's two idle connections per host.
const (
	MaxIdleConns    = 512
	IdleConnTimeout = 90 * time.Second
	DialTimeout     = 5 * time.Second
	// MaxResponseHeaderBytes bounds the upstream's response headers; larger
	// ones get a 502 upstream_response_too_large.
	MaxResponseHeaderBytes = 1 << 20
)

// NewTransport returns the upstream transport: a large keep-alive pool, a
// dial timeout, and responseHeaderTimeout as the limit on the wait for
// response headers. Nothing bounds the body, so streams and WebSockets
// last as long as they need. Proxy settings from the environment are
// ignored: the upstream is reached directly.
func NewTransport(responseHeaderTimeout time.Duration) *http.Transport {
	dialer := &net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		DialContext:            dialer.DialContext,
		MaxIdleConns:           MaxIdleConns,
		MaxIdleConnsPerHost:    MaxIdleConns,
		IdleConnTimeout:        IdleConnTimeout,
		ResponseHeaderTimeout:  responseHeaderTimeout,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
	}
}

// bufferPool lends ReverseProxy 32 KiB copy buffers.
type bufferPool struct{}

// NewBufferPool returns the pool of copy buffers the proxy uses, for a
// baseline ReverseProxy that should be measured on equal terms.
func NewBufferPool() httputil.BufferPool { return bufferPool{} }

const copyBufferSize = 32 << 10

// copyBuffers holds pointers to the buffers' arrays. ReverseProxy hands a
// buffer back as a slice; converting it to its array pointer costs nothing,
// where a *[]byte would be a new allocation on every Put.
var copyBuffers = sync.Pool{New: func() any { return new([copyBufferSize]byte) }}

func (bufferPool) Get() []byte { return copyBuffers.Get().(*[copyBufferSize]byte)[:] }

func (bufferPool) Put(b []byte) {
	if cap(b) == copyBufferSize {
		copyBuffers.Put((*[copyBufferSize]byte)(b[:copyBufferSize]))
	}
}

var (
	upstreamUnavailable = web.NewProblem(http.StatusBadGateway, "upstream_unavailable", "The application is not reachable")
	upstreamTimeout     = web.NewProblem(http.StatusGatewayTimeout, "upstream_timeout", "The application did not answer in time")
	upstreamTooLarge    = web.NewProblem(http.StatusBadGateway, "upstream_response_too_large", "The application's response headers were too large")
)

// upstreamError answers a failed upstream round trip: 504 when the upstream
// was too slow, else 502. The log line names the method and path (never
// the query or cookies) and the transport's error.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if aw, ok := w.(*answerWriter); ok {
		aw.failed = true
	}
	timeout := isTimeout(err)
	level := slog.LevelWarn
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		level = slog.LevelDebug // the client went away
	}
	p.logger.LogAttrs(r.Context(), level, "upstream request failed",
		slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("request_id", requestID(r)),
		slog.Bool("timeout", timeout), slog.String("error", err.Error()))
	switch {
	case timeout:
		web.WriteProblem(w, r, upstreamTimeout)
	case isHeaderTooLarge(err):
		web.WriteProblem(w, r, upstreamTooLarge)
	default:
		web.WriteProblem(w, r, upstreamUnavailable)
	}
}

// isHeaderTooLarge reports whether the transport refused the upstream's
// response headers for exceeding MaxResponseHeaderBytes. net/http has no
// sentinel for it, only this message.
func isHeaderTooLarge(err error) bool {
	return strings.Contains(err.Error(), "server response headers exceeded")
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}
