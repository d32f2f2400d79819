package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The forward-auth examples keep from the app the session cookie that
// Gatehouse's check accepted (SS8), however the client spelled it, and
// leave the other cookies as they were. (Cases from an outside attack on
// the first version of the example configs.)

// frontedSession starts Gatehouse behind the real front (nginx or caddy)
// with an http or https base URL and signs in through the front; it returns
// the front's address and the session cookie's name and value.
func frontedSession(t *testing.T, kind, scheme string) (front, name, id string, errorLog func() string) {
	t.Helper()
	front = freeAddr(t)
	g, app, _ := startFrontedGatehouse(t, front, scheme)
	errorLog = startFront(t, kind, front, g, app)
	req, _ := http.NewRequest("POST", "http://"+front+"/auth/login",
		strings.NewReader(`{"email":"alice@example.com","password":"`+testPassword+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", scheme+"://"+front)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, c := range res.Cookies() {
		if strings.HasSuffix(c.Name, "gatehouse_session") && c.Value != "" {
			name, id = c.Name, c.Value
		}
	}
	if id == "" {
		t.Fatalf("sign-in: %d, no session cookie in %q: %s", res.StatusCode, res.Header["Set-Cookie"], body)
	}
	return front, name, id, errorLog
}

// rawGet sends GET path through the front with the given Cookie lines, byte
// for byte, and returns the status and, from the app's echo, the Cookie
// lines the app received.
func rawGet(t *testing.T, front, path string, cookieLines ...string) (int, []string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", front, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\nConnection: close\r\n", path, front)
	for _, l := range cookieLines {
		b.WriteString("Cookie: " + l + "\r\n")
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return res.StatusCode, nil
	}
	var s struct{ Header http.Header }
	if err := json.NewDecoder(res.Body).Decode(&s); err != nil {
		t.Fatalf("not the app's answer: %v", err)
	}
	return res.StatusCode, s.Header["Cookie"]
}

func TestFrontedSessionCookieNeverReachesApp(t *testing.T) {
	for _, kind := range []string{"nginx", "caddy"} {
		for _, scheme := range []string{"http", "https"} {
			t.Run(kind+"-"+scheme, func(t *testing.T) {
				front, name, id, _ := frontedSession(t, kind, scheme)
				other := "gatehouse_session" // the name this Gatehouse does not use
				if name == other {
					other = "__Host-gatehouse_session"
				}
				session := name + "=" + id
				for _, tc := range []struct {
					sent []string
					want string // the app's Cookie lines joined by "; "; "-": only no session id
				}{
					{[]string{session}, ""},
					{[]string{session + "; b=2"}, "b=2"},
					{[]string{"a=1; " + session + "; b=2"}, "a=1; b=2"},
					{[]string{"my_gatehouse_session=keep; " + session + "; gatehouse_session2=keep"}, "my_gatehouse_session=keep; gatehouse_session2=keep"},
					{[]string{"x=" + name + "=v; " + session + "; theme=dark"}, "x=" + name + "=v; theme=dark"},
					// Gatehouse trims spaces and tabs around the name.
					{[]string{name + " =" + id}, "-"},
					{[]string{name + "\t=" + id}, "-"},
					{[]string{"a=1; " + name + " = " + id + "; b=2"}, "-"},
					// A cookie of the other name first (an older gatehouse_session,
					// or one a sibling host set: __Host- does not stop an
					// unprefixed name) must not hide the credential.
					{[]string{other + "=old; " + session}, "-"},
					{[]string{other + "=old; " + session + "; b=2"}, "-"},
					// Several Cookie lines, as HTTP/1.1 clients may send.
					{[]string{"a=1", session, "b=2"}, "-"},
					{[]string{"a=1; " + session, "b=2"}, "-"},
					{[]string{"a=1", other + "=old; " + session}, "-"},
				} {
					status, got := rawGet(t, front, "/app/page", tc.sent...)
					if status != http.StatusOK {
						t.Errorf("sent %q: status %d, want 200 (signed in)", tc.sent, status)
						continue
					}
					joined := strings.Join(got, "; ")
					if strings.Contains(joined, id) {
						t.Errorf("sent %q: the app got the session id: Cookie %q", tc.sent, got)
					} else if tc.want != "-" && strings.TrimRight(joined, "; ") != tc.want {
						t.Errorf("sent %q: the app got Cookie %q, want %q", tc.sent, got, tc.want)
					}
				}
			})
		}
	}
}

// The nginx map's regexes must not backtrack their way to PCRE's match
// limit: there a map falls back to its default (the whole header, session
// cookie included) after ~150 ms of the worker's CPU, and logs an alert. A
// browser's usual 30 cookies without the session cookie (a public path)
// did that to the first version.
func TestNginxCookieMapIsLinear(t *testing.T) {
	front, _, _, errorLog := frontedSession(t, "nginx", "http")
	var cookies []string
	for i := range 30 {
		cookies = append(cookies, fmt.Sprintf("c%d=v", i))
	}
	header := strings.Join(cookies, "; ")
	status, got := rawGet(t, front, "/static/app.css", header)
	if status != http.StatusOK || strings.Join(got, "; ") != header {
		t.Errorf("public path: %d, Cookie %q, want 200 and the cookies unchanged", status, got)
	}
	if l := errorLog(); strings.Contains(l, "pcre") {
		t.Errorf("the map's regex failed:\n%.300s", l)
	}
}
