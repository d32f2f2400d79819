package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// PX8: the transport settings.
func TestTransportSettings(t *testing.T) {
	tr := NewTransport(7 * time.Second)
	if tr.MaxIdleConns < 512 || tr.MaxIdleConnsPerHost < 512 {
		t.Errorf("idle pool %d/%d per host", tr.MaxIdleConns, tr.MaxIdleConnsPerHost)
	}
	if tr.IdleConnTimeout != 90*time.Second {
		t.Errorf("IdleConnTimeout %v", tr.IdleConnTimeout)
	}
	if tr.ResponseHeaderTimeout != 7*time.Second {
		t.Errorf("ResponseHeaderTimeout %v", tr.ResponseHeaderTimeout)
	}
	if tr.DialContext == nil || tr.Proxy != nil {
		t.Error("dialer missing or environment proxy used")
	}

	p := newEnv(t).proxy
	reverse := p.newForwarding().reverse
	//lint:ignore SA1019 the test checks that the deprecated Director stays unset
	if reverse.Rewrite == nil || reverse.Director != nil {
		t.Error("ReverseProxy must use Rewrite, not Director (PX3)")
	}
	if b := reverse.BufferPool.Get(); len(b) != 32<<10 {
		t.Errorf("buffer of %d bytes", len(b))
	}
}

func TestBufferPoolReuses(t *testing.T) {
	var pool bufferPool
	allocs := testing.AllocsPerRun(100, func() {
		b := pool.Get()
		b[0] = 1
		pool.Put(b)
	})
	if allocs > 1 {
		t.Errorf("%v allocations per Get/Put", allocs)
	}
}

// PX8: many concurrent keep-alive requests reuse upstream connections
// (the default transport would keep only two idle and dial for the rest).
func TestUpstreamConnectionsReused(t *testing.T) {
	var newConns atomic.Int64
	upstream := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Millisecond)
		io.WriteString(w, "ok")
	}))
	upstream.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			newConns.Add(1)
		}
	}
	upstream.Start()
	defer upstream.Close()
	upURL, _ := url.Parse(upstream.URL)

	e := newEnv(t, func(c *Config) { c.Upstream = upURL })
	e.signIn(sessionID)
	front := httptest.NewServer(e.proxy)
	defer front.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()

	const workers, rounds = 32, 20
	var wg sync.WaitGroup
	var failures atomic.Int64
	for range workers {
		wg.Go(func() {
			for range rounds {
				req, _ := http.NewRequest("GET", front.URL+"/app", nil)
				req.Header.Set("Cookie", "gatehouse_session="+sessionID)
				res, err := client.Do(req)
				if err != nil {
					failures.Add(1)
					continue
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					failures.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if failures.Load() != 0 {
		t.Fatalf("%d failed requests", failures.Load())
	}
	// Reuse keeps this near the number of workers (a connection may be
	// dialled while another is being returned to the pool); two idle per
	// host, as in http.DefaultTransport, dials hundreds.
	if n := newConns.Load(); n > 2*workers {
		t.Fatalf("%d upstream connections for %d concurrent clients × %d requests", n, workers, rounds)
	}
}

func decodeProblem(t *testing.T, res *http.Response) web.Problem {
	t.Helper()
	var p web.Problem
	if err := json.NewDecoder(res.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

// Upstream down: 502, a page for browsers, and the proxy keeps serving.
func TestUpstreamDown(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL, _ := url.Parse(closed.URL)
	closed.Close()

	e := newEnv(t, func(c *Config) { c.Upstream = closedURL })
	id := e.signIn(sessionID)
	res := e.serve(withCookie(get("/app"), id))
	if res.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d", res.StatusCode)
	}
	if p := decodeProblem(t, res); p.Code != "upstream_unavailable" {
		t.Fatalf("code %q", p.Code)
	}
	res = e.serve(withCookie(get("/app", "Accept", "text/html"), id))
	if ct := res.Header.Get("Content-Type"); res.StatusCode != http.StatusBadGateway || !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("browser: status %d, %s", res.StatusCode, ct)
	}
	if e.counterValue(t, "error") != 2 || e.counterValue(t, "forwarded") != 0 {
		t.Error("upstream failures not counted as errors")
	}
	if !strings.Contains(e.logs.String(), "upstream request failed") || strings.Contains(e.logs.String(), id) {
		t.Errorf("log: %s", e.logs.String())
	}
}

func TestProxyKeepsServingAfterUpstreamFailure(t *testing.T) {
	e := newEnv(t)
	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/crash" {
			panic(http.ErrAbortHandler) // drops the connection without an answer
		}
		io.WriteString(w, "ok")
	}
	id := e.signIn(sessionID)
	for i := range 3 {
		if res := e.serve(withCookie(get("/crash"), id)); res.StatusCode != http.StatusBadGateway {
			t.Fatalf("crash %d: status %d", i, res.StatusCode)
		}
		if res := e.serve(withCookie(get("/fine"), id)); res.StatusCode != http.StatusOK {
			t.Fatalf("after crash %d: status %d", i, res.StatusCode)
		}
	}
}

// An upstream slower than UpstreamTimeout: 504.
func TestUpstreamTimeout(t *testing.T) {
	release := make(chan struct{})
	e := newEnv(t, func(c *Config) { c.UpstreamTimeout = 50 * time.Millisecond })
	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
	defer close(release)
	res := e.serve(withCookie(get("/slow"), e.signIn(sessionID)))
	if res.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("status %d", res.StatusCode)
	}
	if p := decodeProblem(t, res); p.Code != "upstream_timeout" {
		t.Fatalf("code %q", p.Code)
	}
	if e.counterValue(t, "error") != 1 {
		t.Error("timeout not counted as an error")
	}
}

// Response headers over 1 MiB get a 502 that says the response was too
// large, not that the application is unreachable; headers just under the
// limit pass.
func TestUpstreamHeadersTooLarge(t *testing.T) {
	for _, tc := range []struct {
		name     string
		size     int
		status   int
		wantCode string
	}{
		{"under the limit", MaxResponseHeaderBytes - 64<<10, http.StatusOK, ""},
		{"over the limit", MaxResponseHeaderBytes + 64<<10, http.StatusBadGateway, "upstream_response_too_large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				chunk := strings.Repeat("x", 8<<10)
				for i := range tc.size / len(chunk) {
					w.Header().Add(fmt.Sprintf("X-Big-%d", i), chunk)
				}
			}))
			defer up.Close()
			upURL, _ := url.Parse(up.URL)
			e := newEnv(t, func(c *Config) { c.Upstream = upURL })
			id := e.signIn(sessionID)
			res := e.serve(withCookie(get("/app"), id))
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tc.status)
			}
			if tc.wantCode != "" {
				if p := decodeProblem(t, res); p.Code != tc.wantCode {
					t.Fatalf("code %q, want %q", p.Code, tc.wantCode)
				}
			}
		})
	}
}
