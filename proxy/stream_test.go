package proxy

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A WebSocket round trip through the proxy for a signed-in user; refused
// without a session, and then the upstream never sees the upgrade.
func TestWebSocket(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.UpstreamTimeout = time.Second })
	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, msg, err := c.Read(r.Context())
			if err != nil {
				return
			}
			reply := append([]byte(r.Header.Get("X-Forwarded-User")+":"), msg...)
			if err := c.Write(r.Context(), typ, reply); err != nil {
				return
			}
		}
	}
	front := httptest.NewServer(e.proxy)
	defer front.Close()
	wsURL := "ws" + strings.TrimPrefix(front.URL, "http") + "/ws"
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	_, res, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: noRedirects})
	if err == nil {
		t.Fatal("upgrade without a session succeeded")
	}
	if res == nil || res.StatusCode != http.StatusFound || e.upstream.count() != 0 {
		t.Fatalf("without session: %v, upstream saw %d requests", res, e.upstream.count())
	}

	header := http.Header{"Cookie": {"gatehouse_session=" + e.signIn(sessionID)}}
	conn, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	// Longer than UpstreamTimeout: the timeout bounds only the handshake.
	for i, msg := range []string{"hello", "again"} {
		if i == 1 {
			time.Sleep(1500 * time.Millisecond)
		}
		if err := conn.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		_, got, err := conn.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != userID+":"+msg {
			t.Fatalf("echo %q", got)
		}
	}
	conn.Close(websocket.StatusNormalClosure, "")
	if c := e.upstream.last(t).Header.Get("Cookie"); c != "" {
		t.Errorf("session cookie forwarded on upgrade: %q", c)
	}
}

// SSE: the client gets the first event before the upstream has finished.
func TestServerSentEventsStream(t *testing.T) {
	e := newEnv(t)
	finish := make(chan struct{})
	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-finish:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "data: last\n\n")
	}
	front := httptest.NewServer(e.proxy)
	defer front.Close()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", front.URL+"/events", nil)
	req.Header.Set("Cookie", "gatehouse_session="+e.signIn(sessionID))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()

	lines := make(chan string)
	go func() {
		defer close(lines)
		scanner := bufio.NewScanner(res.Body)
		for scanner.Scan() {
			if line := scanner.Text(); line != "" {
				lines <- line
			}
		}
	}()
	select {
	case line := <-lines:
		if line != "data: first" {
			t.Fatalf("first line %q", line)
		}
	case <-time.After(5 * time.Second):
		close(finish)
		t.Fatal("first event held back until the upstream finished")
	}
	close(finish)
	if line := <-lines; line != "data: last" {
		t.Fatalf("last line %q", line)
	}
}

// A chunked response without Content-Length streams too.
func TestChunkedStream(t *testing.T) {
	e := newEnv(t)
	finish := make(chan struct{})
	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "part one\n")
		w.(http.Flusher).Flush()
		select {
		case <-finish:
		case <-r.Context().Done():
		}
	}
	front := httptest.NewServer(e.proxy)
	defer front.Close()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", front.URL+"/chunks", nil)
	req.Header.Set("Cookie", "gatehouse_session="+e.signIn(sessionID))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(res.Body).ReadString('\n')
		got <- line
	}()
	select {
	case line := <-got:
		if line != "part one\n" {
			t.Fatalf("got %q", line)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("chunk held back")
	}
	close(finish)
}
