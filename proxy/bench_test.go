package proxy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/assertion"
	"github.com/gatehouse-auth/gatehouse/proxy/bearer"
	"github.com/gatehouse-auth/gatehouse/proxy/policy"
	"github.com/gatehouse-auth/gatehouse/proxy/route"
	"github.com/gatehouse-auth/gatehouse/proxy/session"
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
		Upstream:  upURL,
		Auth:      http.NotFoundHandler(),
		Sessions:  store,
		LastSeen:  &session.LastSeen{Store: store},
		Routes:    liveRules(b, []string{"/static"}),
		Denier:    web.Denier{Mode: web.ModeRedirect, BaseURL: baseURL},
		IdleTTL:   time.Hour,
		Transport: transport,
	})
	if err != nil {
		b.Fatal(err)
	}
	// The same with an access policy of 3 domains and a 10,000-line emails
	// file; the session's address is in the file and matches no domain.
	emails := filepath.Join(b.TempDir(), "emails.txt")
	var list strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&list, "user%d@example.com\n", i)
	}
	list.WriteString(userEmail + "\n")
	if err := os.WriteFile(emails, []byte(list.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	pol, err := policy.New(policy.Rules{EmailDomains: []string{"corp.com", ".corp.net", "example.org"}, EmailsFile: emails}, nil)
	if err != nil {
		b.Fatal(err)
	}
	withPolicy, err := New(Config{
		Upstream:  upURL,
		Auth:      http.NotFoundHandler(),
		Sessions:  store,
		LastSeen:  &session.LastSeen{Store: store},
		Policy:    pol,
		Routes:    liveRules(b, []string{"/static"}),
		Denier:    web.Denier{Mode: web.ModeRedirect, BaseURL: baseURL},
		IdleTTL:   time.Hour,
		Transport: transport,
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
		LastSeen:           &session.LastSeen{Store: store},
		Routes:             liveRules(b, []string{"/static"}),
		Denier:             web.Denier{Mode: web.ModeRedirect, BaseURL: baseURL},
		IdleTTL:            time.Hour,
		Transport:          transport,
		Assertions:         issuer,
		ForwardAuthTrusted: web.TrustedProxies{netip.MustParsePrefix("192.0.2.0/24")}, // httptest's RemoteAddr
	})
	if err != nil {
		b.Fatal(err)
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
	withAccessLog, err := New(Config{
		Upstream:  upURL,
		Auth:      http.NotFoundHandler(),
		Sessions:  store,
		LastSeen:  &session.LastSeen{Store: store},
		Routes:    liveRules(b, []string{"/static"}),
		Denier:    web.Denier{Mode: web.ModeRedirect, BaseURL: baseURL},
		IdleTTL:   time.Hour,
		Transport: transport,
		AccessLog: access,
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
		{"gatehouse-accesslog", withAccessLog, "/app/page?x=1"},
		{"gatehouse+policy", withPolicy, "/app/page?x=1"},
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
	// Interleaved: the two Gatehouses take turns request by request, so a
	// busy machine slows both alike; reports the policy's extra cost as the
	// difference of the median request times, in percent of a request
	// through Gatehouse without it (medians: preemptions do not count).
	b.Run("policy-interleaved", func(b *testing.B) {
		r := httptest.NewRequest("GET", "/app/page?x=1", nil)
		r.Header.Set("Cookie", "theme=dark; gatehouse_session="+sessionID)
		r.Header.Set("Accept", "text/html")
		w := &discardWriter{h: make(http.Header)}
		var plain, policed []time.Duration
		for i := 0; b.Loop(); i++ {
			clear(w.h)
			handler, times := http.Handler(gatehouse), &plain
			if i%2 == 1 {
				handler, times = withPolicy, &policed
			}
			start := time.Now()
			handler.ServeHTTP(w, r)
			*times = append(*times, time.Since(start))
		}
		if len(policed) > 0 {
			slices.Sort(plain)
			slices.Sort(policed)
			p, q := plain[len(plain)/2], policed[len(policed)/2]
			b.ReportMetric((float64(q)/float64(p)-1)*100, "policy-extra-%")
			b.ReportMetric(float64(q-p), "policy-extra-ns")
		}
	})
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

// BenchmarkRoutes is a signed-in request through Gatehouse with an
// in-memory upstream: with no route rule, and with 100 rules (a mix of
// hosts, methods, groups and prefixes) whose last one matches; and on a
// tokens route, a user's API token (the verifier over an in-memory token
// store, as the store's cache answers it) against the cookie session.
func BenchmarkRoutes(b *testing.B) {
	upURL := &url.URL{Scheme: "http", Host: "upstream.invalid"}
	store := newFakeStore()
	store.put(sessionID, storage.Session{
		UserID: userID, Email: userEmail, ExpiresAt: time.Now().Add(time.Hour), LastSeen: time.Now(),
	})
	var many []route.Rule
	for i := range 99 {
		r := route.Rule{Path: fmt.Sprintf("/section%d/", i)}
		switch i % 4 {
		case 0:
			r.Allow = route.Deny
		case 1:
			r.Groups = []string{"oidc:admins"}
		case 2:
			r.Methods = []string{"POST"}
			r.Allow = route.Deny
		case 3:
			r.Host = fmt.Sprintf("app%d.example.com", i)
		}
		many = append(many, r)
	}
	many = append(many, route.Rule{Path: "/app/", Tokens: true})
	tokens := newTokens()
	token := tokens.add(storage.APIToken{UserID: userID})
	verifier, err := bearer.New(bearer.Config{Tokens: tokens, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	build := func(rules *route.Live) *Proxy {
		p, err := New(Config{
			Upstream: upURL, Auth: http.NotFoundHandler(), Sessions: store, LastSeen: &session.LastSeen{Store: store},
			Routes: rules, Denier: web.Denier{Mode: web.ModeRedirect, BaseURL: baseURL}, IdleTTL: time.Hour,
			Transport: cannedTransport{}, Bearer: verifier, Throttle: &bearer.Throttle{},
			Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	none, hundred := build(liveRules(b, nil)), build(liveRules(b, nil, many...))
	for _, bc := range []struct {
		name    string
		handler http.Handler
		header  []string
	}{
		{"no-rules", none, []string{"Cookie", "gatehouse_session=" + sessionID}},
		{"100-rules-last-matches", hundred, []string{"Cookie", "gatehouse_session=" + sessionID}},
		{"tokens-route-cookie", hundred, []string{"Cookie", "gatehouse_session=" + sessionID}},
		{"tokens-route-user-token", hundred, []string{"Authorization", "Bearer " + token}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				r := httptest.NewRequest("GET", "/app/page?x=1", nil)
				for i := 0; i+1 < len(bc.header); i += 2 {
					r.Header.Set(bc.header[i], bc.header[i+1])
				}
				r.Header.Set("Accept", "text/html")
				w := &discardWriter{h: make(http.Header)}
				for pb.Next() {
					clear(w.h)
					// The proxy takes the Authorization header off the
					// upstream request, not this one.
					bc.handler.ServeHTTP(w, r)
				}
			})
		})
	}
}
