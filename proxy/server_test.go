package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// PX7: timeouts that stop slow-header attacks and idle connections, and
// none that would cut a stream or a WebSocket.
func TestNewServer(t *testing.T) {
	s := NewServer(":8080", http.NotFoundHandler())
	if s.Addr != ":8080" || s.Handler == nil {
		t.Fatal("address or handler not set")
	}
	if s.ReadHeaderTimeout != 10*time.Second || s.IdleTimeout != 120*time.Second {
		t.Errorf("ReadHeaderTimeout %v, IdleTimeout %v", s.ReadHeaderTimeout, s.IdleTimeout)
	}
	if s.ReadTimeout != 0 || s.WriteTimeout != 0 {
		t.Errorf("ReadTimeout %v, WriteTimeout %v would cut streams", s.ReadTimeout, s.WriteTimeout)
	}
	if s.MaxHeaderBytes != 64<<10 {
		t.Errorf("MaxHeaderBytes %d", s.MaxHeaderBytes)
	}
}

// PX6: oversized request headers are refused before the handler runs.
func TestHeaderCap(t *testing.T) {
	e := newEnv(t)
	server := httptest.NewUnstartedServer(e.proxy)
	server.Config = NewServer("", e.proxy)
	server.Start()
	defer server.Close()
	addr := strings.TrimPrefix(server.URL, "http://")

	res := rawRequest(t, addr, "GET", "/static/x", "X-Big: "+strings.Repeat("a", 80<<10)+"\r\n")
	res.Body.Close()
	if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status %d", res.StatusCode)
	}
	if e.upstream.count() != 0 {
		t.Fatal("oversized request forwarded")
	}
	res = rawRequest(t, addr, "GET", "/static/x", "X-Fine: "+strings.Repeat("a", 8<<10)+"\r\n")
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("normal request: status %d", res.StatusCode)
	}
}

// "OPTIONS *" reaches the handler (NewServer does not let net/http answer
// it): without a session it is refused like any request, and never
// forwarded.
func TestOptionsStarNeedsASession(t *testing.T) {
	e := newEnv(t)
	server := httptest.NewUnstartedServer(e.proxy)
	server.Config = NewServer("", e.proxy)
	server.Start()
	defer server.Close()
	res := rawRequest(t, strings.TrimPrefix(server.URL, "http://"), http.MethodOptions, "*", "")
	res.Body.Close()
	if res.StatusCode < 400 { // net/http's own answer is 200
		t.Errorf("OPTIONS * without a session: %d, want the proxy's refusal", res.StatusCode)
	}
	if n := e.upstream.count(); n != 0 {
		t.Errorf("OPTIONS * reached the upstream %d times", n)
	}
}
