package proxy

import (
	"bufio"
	"net"
	"net/http"
	"sync"
	"time"
)

// outcome is what became of a request, for the duration histogram and the
// access log.
type outcome uint8

const (
	outcomeForwarded outcome = iota
	outcomePublic
	outcomeUnauthenticated
	outcomeRedirected
	outcomeError
	outcomeAuth
	outcomeRefused // signed in, refused by the access policy
	outcomeCheck   // a forward-auth check endpoint
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"forwarded", "public", "unauthenticated", "redirected", "error", "auth", "refused", "check"}

// statusClasses are the labels of status / 100; 0 stands for anything else.
var statusClasses = [6]string{"other", "1xx", "2xx", "3xx", "4xx", "5xx"}

func statusClass(status int) int {
	if c := status / 100; c >= 1 && c <= 5 {
		return c
	}
	return 0
}

// served is the result of serve: what the metrics and the access log need.
type served struct {
	outcome outcome
	path    string // the cleaned path, without the query
	userID  string
}

// ServeHTTP serves one request and observes it: in-flight gauge, duration
// by outcome and status class, and the access log line. The response writer
// wrapper that sees the status and the bytes is pooled; it unwraps for
// http.ResponseController, so streaming and WebSocket upgrades pass through.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	p.metrics.inFlight.Inc()
	// Deferred: ReverseProxy aborts a response whose upstream body broke
	// off by panicking with http.ErrAbortHandler.
	defer p.metrics.inFlight.Dec()
	sw := statusWriterPool.Get().(*statusWriter)
	sw.ResponseWriter, sw.status, sw.bytes = w, 0, 0
	res := p.serve(sw, r)
	status := sw.status
	if status == 0 {
		status = http.StatusOK
	}
	elapsed := time.Since(start)
	p.metrics.duration[res.outcome][statusClass(status)].Observe(elapsed.Seconds())
	if p.access != nil {
		e := accessEntry{
			start: start, method: r.Method, path: res.path, status: status, bytes: sw.bytes,
			duration: elapsed, userID: res.userID, requestID: requestID(r), clientIP: p.trusted.ClientIP(r),
		}
		p.access.write(&e)
	}
	sw.ResponseWriter = nil
	statusWriterPool.Put(sw)
}

// statusWriter records the status and the body bytes of an answer.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

var statusWriterPool = sync.Pool{New: func() any { return new(statusWriter) }}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 || w.status < 200 && status >= 200 { // a 1xx may precede the final status
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach Flush, Hijack and deadlines.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush and Hijack are also offered directly, for code that type-asserts.
func (w *statusWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// Hijack takes the connection over, as for a WebSocket handshake, whose 101
// then goes out on it: that is the status the access log tells.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.status < http.StatusOK {
		w.status = http.StatusSwitchingProtocols
	}
	return conn, brw, err
}
