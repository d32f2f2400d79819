package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// discardWriter is a ResponseWriter that keeps nothing, so the benchmark
// measures the proxy rather than a recorder.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

// BenchmarkProxy compares a plain ReverseProxy (same transport and buffer
// pool) with Gatehouse forwarding a signed-in request, against the same
// upstream: the difference is Gatehouse's own work (header scrub, path
// cleaning, cookie parse, SHA-256, store lookup, identity headers).
func BenchmarkProxy(b *testing.B) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer upstream.Close()
	upURL, _ := url.Parse(upstream.URL)
	benchmarkBareAndGatehouse(b, upURL, NewTransport(DefaultUpstreamTimeout))
}

// BenchmarkOverhead is BenchmarkProxy with an in-memory upstream, so that
// network noise does not hide the proxy's own cost.
func BenchmarkOverhead(b *testing.B) {
	upURL := &url.URL{Scheme: "http", Host: "upstream.invalid"}
	benchmarkBareAndGatehouse(b, upURL, cannedTransport{})
}

// cannedTransport answers every request with a small 200, in memory.
type cannedTransport struct{}

func (cannedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"text/plain"}},
		Body:          io.NopCloser(strings.NewReader("ok")),
		ContentLength: 2, Request: r,
	}, nil
}

func benchmarkBareAndGatehouse(b *testing.B, upURL *url.URL, transport http.RoundTripper) {
	bare := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upURL)
			pr.SetXForwarded()
		},
		Transport:  transport,
		BufferPool: bufferPool{},
	}

	store := newFakeStore()
	store.put(sessionID, storage.Session{
		UserID: userID, Email: userEmail, ExpiresAt: time.Now().Add(time.Hour), LastSeen: time.Now(),
	})
	newGatehouse := func(access *AccessLog) *Proxy {
		p, err := New(Config{
			Upstream:    upURL,
			Auth:        http.NotFoundHandler(),
			Sessions:    store,
			LastSeen:    &LastSeen{Store: store},
			PublicPaths: []string{"/static"},
			Denier:      web.Denier{Mode: web.ModeRedirect, BaseURL: baseURL},
			IdleTTL:     time.Hour,
			Transport:   transport,
			AccessLog:   access,
		})
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	// The access log writes to /dev/null through its batching loop, as it
	// would to a file or a pipe: the formatting and the batched writes count.
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devNull.Close()
	access := NewAccessLog(devNull, false)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go access.Run(ctx)
	for _, bc := range []struct {
		name    string
		handler http.Handler
	}{{"bare", bare}, {"gatehouse", newGatehouse(nil)}, {"gatehouse-accesslog", newGatehouse(access)}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				r := httptest.NewRequest("GET", "/app/page?x=1", nil)
				r.Header.Set("Cookie", "theme=dark; gatehouse_session="+sessionID)
				r.Header.Set("Accept", "text/html")
				r.Header.Set("User-Agent", "bench")
				w := &discardWriter{h: make(http.Header)}
				for pb.Next() {
					clear(w.h)
					bc.handler.ServeHTTP(w, r)
				}
			})
		})
	}
}

// BenchmarkAccessLogLine is the access log's own cost per request: format
// one line and add it to the batch (the batch goes to /dev/null).
func BenchmarkAccessLogLine(b *testing.B) {
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devNull.Close()
	a := NewAccessLog(devNull, false)
	r := httptest.NewRequest("GET", "/app/page?x=1", nil)
	e := accessEntry{start: time.Now(), method: "GET", path: "/app/page", status: 200, bytes: 2, duration: time.Millisecond,
		userID: userID, requestID: "0123456789abcdef0123456789abcdef"}
	b.ReportAllocs()
	for b.Loop() {
		e.clientIP = web.TrustedProxies(nil).ClientIP(r)
		a.write(&e)
	}
}
