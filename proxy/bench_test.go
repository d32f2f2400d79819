package proxy

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/assertion"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
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
	gatehouse, err := New(Config{
		Upstream:    upURL,
		Auth:        http.NotFoundHandler(),
		Sessions:    store,
		LastSeen:    &LastSeen{Store: store},
		PublicPaths: []string{"/static"},
		Denier:      web.Denier{Mode: web.ModeRedirect, BaseURL: baseURL},
		IdleTTL:     time.Hour,
		Transport:   transport,
	})
	if err != nil {
		b.Fatal(err)
	}
	// The same with the identity assertion on (its token cached per
	// session, as in production) and the forward-auth check endpoint.
	keyStore, err := bolt.Open(filepath.Join(b.TempDir(), "keys.db"), bolt.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer keyStore.Close()
	keys, err := assertion.NewKeys(b.Context(), keyStore, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	issuer, err := assertion.New(assertion.Config{Keys: keys, Issuer: baseURL.String(), Audience: baseURL.String()})
	if err != nil {
		b.Fatal(err)
	}
	withAssertion, err := New(Config{
		Upstream:           upURL,
		Auth:               http.NotFoundHandler(),
		Sessions:           store,
		LastSeen:           &LastSeen{Store: store},
		PublicPaths:        []string{"/static"},
		Denier:             web.Denier{Mode: web.ModeRedirect, BaseURL: baseURL},
		IdleTTL:            time.Hour,
		Transport:          transport,
		Assertions:         issuer,
		ForwardAuthTrusted: web.TrustedProxies{netip.MustParsePrefix("192.0.2.0/24")}, // httptest's RemoteAddr
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name    string
		handler http.Handler
		target  string
	}{
		{"bare", bare, "/app/page?x=1"},
		{"gatehouse", gatehouse, "/app/page?x=1"},
		{"gatehouse+assertion", withAssertion, "/app/page?x=1"},
		{"forward-auth", withAssertion, ForwardAuthPath},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				r := httptest.NewRequest("GET", bc.target, nil)
				if bc.target == ForwardAuthPath {
					r.Header.Set("X-Forwarded-Method", "GET")
					r.Header.Set("X-Forwarded-Proto", "https")
					r.Header.Set("X-Forwarded-Host", "app.example.com")
					r.Header.Set("X-Forwarded-Uri", "/app/page?x=1")
				}
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
