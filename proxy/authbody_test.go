package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// PX6: a body under /auth/ that stops arriving is cut once the read
// deadline passes; the handler sees a read error and the client an answer,
// instead of a connection held forever. A body sent in full still works.
func TestAuthBodyReadIsBounded(t *testing.T) {
	e := newEnv(t)
	e.proxy.authBodyTimeout = 300 * time.Millisecond
	e.auth.handler = func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "body read failed", http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "read %d", len(b))
	}
	front := httptest.NewServer(e.proxy)
	t.Cleanup(front.Close) // after the connections' own cleanups

	send := func(body string, declared int) (*http.Response, error) {
		conn, err := net.Dial("tcp", front.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		// The guard of the test itself: far beyond the proxy's deadline.
		conn.SetDeadline(time.Now().Add(15 * time.Second))
		fmt.Fprintf(conn, "POST /auth/login HTTP/1.1\r\nHost: gate.example.com\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s", declared, body)
		return http.ReadResponse(bufio.NewReader(conn), nil)
	}

	// A trickle that stops after 5 of 100 bytes.
	res, err := send("email", 100)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("stalled body: status %d, want 400", res.StatusCode)
	}

	// A whole body is read as usual, and the connection keeps working.
	res, err = send("email=a%40b.c", 13)
	if err != nil {
		t.Fatal(err)
	}
	if got := body(t, res); got != "read 13" {
		t.Errorf("whole body: %q", got)
	}
}

// PX6: bodies under /auth/ are capped.

func TestAuthBodyCap(t *testing.T) {
	e := newEnv(t)
	big := strings.Repeat("a", web.MaxAuthBody+1)
	res := e.serve(httptest.NewRequest("POST", "/auth/login", strings.NewReader(big)))
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("declared oversize body: status %d", res.StatusCode)
	}
	if p := decodeProblem(t, res); p.Code != web.BodyTooLarge.Code {
		t.Fatalf("declared oversize body: code %q, want %q", p.Code, web.BodyTooLarge.Code)
	}
	if e.auth.count() != 0 {
		t.Fatal("oversize body reached the auth handler")
	}

	var readErr error
	e.auth.handler = func(w http.ResponseWriter, r *http.Request) {
		_, readErr = r.Body.Read(make([]byte, 2*web.MaxAuthBody))
		for readErr == nil {
			_, readErr = r.Body.Read(make([]byte, 1024))
		}
	}
	r := httptest.NewRequest("POST", "/auth/login", strings.NewReader(big))
	r.ContentLength = -1 // chunked: the cap is enforced while reading
	e.serve(r)
	var tooLarge *http.MaxBytesError
	if !errors.As(readErr, &tooLarge) {
		t.Fatalf("reading an unbounded body: %v", readErr)
	}
}
