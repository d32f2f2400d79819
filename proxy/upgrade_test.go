package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// switchingUpstream accepts any upgrade it is asked for, as a careless
// upstream would, and otherwise answers "plain".
func switchingUpstream(w http.ResponseWriter, r *http.Request) {
	up := r.Header.Get("Upgrade")
	if up == "" {
		io.WriteString(w, "plain")
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", up)
	brw.Flush()
}

// sendUpgrade sends one raw upgrade request and reads the answer's head.
func sendUpgrade(t *testing.T, addr, method, path, upgrade, cookie string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	extra := ""
	if upgrade == "h2c" {
		extra = "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n"
	}
	if cookie != "" {
		extra += "Cookie: " + DefaultCookieName + "=" + cookie + "\r\n"
	}
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: gate.example.com\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: %s\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n%sContent-Length: 0\r\n\r\n",
		method, path, upgrade, extra)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s Upgrade: %s: %v", method, path, upgrade, err)
	}
	return res
}

// UP1: only WebSocket upgrades pass, and only where the same request would
// pass without the upgrade; any other upgrade is served as plain HTTP.
func TestOnlyWebSocketUpgradesPass(t *testing.T) {
	cases := []struct {
		name, method, path, upgrade string
		signedIn                    bool
		wantStatus                  int
		wantUpgrade                 string // Upgrade header the upstream saw
	}{
		{"h2c on a public path", "GET", "/static/x", "h2c", false, http.StatusOK, ""},
		{"h2c signed in", "GET", "/app", "h2c", true, http.StatusOK, ""},
		{"made-up protocol signed in", "GET", "/app", "tls/1.3", true, http.StatusOK, ""},
		{"websocket plus h2c", "GET", "/app", "websocket, h2c", true, http.StatusOK, ""},
		{"websocket by POST", "POST", "/app", "websocket", true, http.StatusOK, ""},
		{"websocket on a public path", "GET", "/static/ws", "websocket", false, http.StatusSwitchingProtocols, "websocket"},
		{"websocket signed in", "GET", "/ws", "websocket", true, http.StatusSwitchingProtocols, "websocket"},
		{"websocket without a session", "GET", "/ws", "websocket", false, http.StatusFound, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.upstream.handler = switchingUpstream
			front := httptest.NewServer(e.proxy)
			defer front.Close()
			cookie := ""
			if tc.signedIn {
				cookie = e.signIn(sessionID)
			}
			res := sendUpgrade(t, front.Listener.Addr().String(), tc.method, tc.path, tc.upgrade, cookie)
			res.Body.Close()
			if res.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d", res.StatusCode, tc.wantStatus)
			}
			if tc.wantStatus == http.StatusFound {
				if e.upstream.count() != 0 {
					t.Fatal("upgrade without a session reached the upstream")
				}
				return
			}
			seen := e.upstream.last(t)
			if got := seen.Header.Get("Upgrade"); got != tc.wantUpgrade {
				t.Errorf("upstream saw Upgrade %q, want %q", got, tc.wantUpgrade)
			}
			if got := seen.Header.Get("Http2-Settings"); got != "" {
				t.Errorf("upstream saw HTTP2-Settings %q", got)
			}
		})
	}
}

// An upstream cannot set the session cookie on a WebSocket handshake
// either (SS8): Set-Cookie lines of that name are dropped from a 1xx sent
// before the 101, and from the 101, as from any answer.
func TestUpgradeDropsSessionCookieFromInformationalAnswers(t *testing.T) {
	e := newEnv(t)
	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		forged := "Set-Cookie: " + DefaultCookieName + "=forged; Path=/\r\nSet-Cookie: theme=dark\r\n"
		fmt.Fprintf(brw, "HTTP/1.1 103 Early Hints\r\n%sLink: </app.js>; rel=preload\r\n\r\n", forged)
		fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n%s\r\n", forged)
		brw.Flush()
	}
	front := httptest.NewServer(e.proxy)
	defer front.Close()
	conn, err := net.Dial("tcp", front.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(conn, webSocketHandshake(e.signIn(sessionID)))
	br := bufio.NewReader(conn)
	for _, want := range []int{http.StatusEarlyHints, http.StatusSwitchingProtocols} {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("reading the %d: %v", want, err)
		}
		if res.StatusCode != want {
			t.Fatalf("status %d, want %d", res.StatusCode, want)
		}
		if got := res.Header.Values("Set-Cookie"); len(got) != 1 || got[0] != "theme=dark" {
			t.Errorf("%d carried Set-Cookie %q, want only theme=dark", want, got)
		}
	}
}

// An upstream that refuses a WebSocket handshake with an ordinary answer
// cannot set the session cookie in that answer's trailers either (SS8).
func TestUpgradeRefusedDropsSessionCookieFromTrailers(t *testing.T) {
	for _, announced := range []bool{true, false} {
		t.Run(fmt.Sprint("announced=", announced), func(t *testing.T) {
			e := newEnv(t)
			e.upstream.handler = trailerCookieUpstream(announced)
			front := httptest.NewServer(e.proxy)
			defer front.Close()
			res := sendUpgrade(t, front.Listener.Addr().String(), "GET", "/ws", "websocket", e.signIn(sessionID))
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusOK || string(b) != "payload" {
				t.Fatalf("status %d body %q, want the upstream's 200", res.StatusCode, b)
			}
			if got := res.Trailer.Values("Set-Cookie"); len(got) != 1 || got[0] != "theme=dark" {
				t.Fatalf("trailer Set-Cookie %q, want only theme=dark", got)
			}
		})
	}
}

// The access log tells a WebSocket handshake by its 101, which goes out on
// the hijacked connection rather than through WriteHeader.
func TestUpgradeLogsSwitchingProtocols(t *testing.T) {
	logbuf := &syncBuffer{}
	access := NewAccessLog(logbuf, false)
	e := newEnv(t, func(c *Config) { c.AccessLog = access })
	e.upstream.handler = switchingUpstream
	front := httptest.NewServer(e.proxy)
	defer front.Close()
	conn, err := net.Dial("tcp", front.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(conn, webSocketHandshake(e.signIn(sessionID)))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("answer %v, %v; want a 101", res, err)
	}
	conn.Close() // the tunnel, and so the request, ends when both sides have
	deadline := time.Now().Add(5 * time.Second)
	for access.Flush(); !strings.Contains(logbuf.String(), "path=/ws"); access.Flush() {
		if time.Now().After(deadline) {
			t.Fatalf("no access line for /ws: %q", logbuf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(logbuf.String(), " status=101 ") {
		t.Fatalf("access line %q, want status=101", logbuf.String())
	}
}

// webSocketHandshake is a signed-in WebSocket handshake for /ws.
func webSocketHandshake(session string) string {
	return "GET /ws HTTP/1.1\r\nHost: gate.example.com\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nCookie: " + DefaultCookieName + "=" + session + "\r\n\r\n"
}
