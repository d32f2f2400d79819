package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"
)

// The forwarding path (forward.go, one httputil.ReverseProxy for every
// request): these tests pin what the other tests do not reach.

// Hop-by-hop headers go both ways, those the Connection header names
// included, and "Te: trailers" is passed on when the client sent it.
func TestForwardDropsHopByHopHeaders(t *testing.T) {
	e := newEnv(t)
	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "X-Upstream-Private")
		w.Header().Set("X-Upstream-Private", "secret")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("X-Kept", "yes")
		io.WriteString(w, "ok")
	}
	r := withCookie(get("/app", "Connection", "X-Client-Private, keep-alive", "X-Client-Private", "x",
		"Keep-Alive", "timeout=5", "Proxy-Authorization", "Basic eA==", "Te", "trailers, deflate",
		"Trailer", "X-T", "X-Kept", "yes"), e.signIn(sessionID))
	res := e.serve(r)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	seen := e.upstream.last(t).Header
	for _, h := range []string{"X-Client-Private", "Keep-Alive", "Proxy-Authorization", "Trailer"} {
		if v, ok := seen[h]; ok {
			t.Errorf("upstream got hop-by-hop %s: %q", h, v)
		}
	}
	if got := seen.Get("Te"); got != "trailers" {
		t.Errorf("upstream Te = %q, want trailers", got)
	}
	if seen.Get("X-Kept") != "yes" || seen.Get("X-Forwarded-User") != userID {
		t.Errorf("upstream lost end-to-end or identity headers: %v", seen)
	}
	for _, h := range []string{"X-Upstream-Private", "Keep-Alive"} {
		if v, ok := res.Header[h]; ok {
			t.Errorf("client got hop-by-hop %s: %q", h, v)
		}
	}
	if res.Header.Get("X-Kept") != "yes" {
		t.Errorf("client lost X-Kept: %v", res.Header)
	}
}

// The inbound request keeps its own header values: the upstream request
// shares them, and the session cookie is taken out of a copy.
func TestForwardLeavesInboundHeadersAlone(t *testing.T) {
	e := newEnv(t)
	r := get("/app", "Cookie", "theme=dark; "+DefaultCookieName+"="+e.signIn(sessionID)) // one line: removeCookie edits it
	before := append([]string(nil), r.Header["Cookie"]...)
	e.serve(r)
	if got := r.Header["Cookie"]; strings.Join(got, "|") != strings.Join(before, "|") {
		t.Fatalf("inbound Cookie changed from %q to %q", before, got)
	}
	if got := e.upstream.last(t).Header["Cookie"]; len(got) != 1 || got[0] != "theme=dark" {
		t.Fatalf("upstream Cookie %q, want only theme=dark", got)
	}
}

// A request body reaches the upstream whole; an empty one is no body.
func TestForwardPassesBodies(t *testing.T) {
	e := newEnv(t)
	var got []string
	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, r.Method+" "+string(b)+" "+strings.Join(r.TransferEncoding, ","))
		io.WriteString(w, "ok")
	}
	front := httptest.NewServer(e.proxy)
	defer front.Close()
	cookie := "gatehouse_session=" + e.signIn(sessionID)
	for _, c := range []struct {
		method string
		body   io.Reader
	}{
		{"POST", strings.NewReader("hello")},
		{"PUT", io.MultiReader(strings.NewReader("chunk"), strings.NewReader("ed"))}, // unknown length: chunked
		{"POST", nil},
	} {
		req, _ := http.NewRequest(c.method, front.URL+"/app", c.body)
		req.Header.Set("Cookie", cookie)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body(t, res)
	}
	want := []string{"POST hello ", "PUT chunked chunked", "POST  "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("upstream read %q, want %q", got, want)
	}
}

// Trailers the upstream sends reach the client.
func TestForwardCopiesTrailers(t *testing.T) {
	e := newEnv(t)
	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Checksum")
		io.WriteString(w, "payload")
		w.Header().Set("X-Checksum", "abc")
		w.Header().Set(http.TrailerPrefix+"X-Late", "late")
	}
	res, err := e.getSignedIn(t, "/app")
	if err != nil {
		t.Fatal(err)
	}
	if b := body(t, res); b != "payload" {
		t.Fatalf("body %q", b)
	}
	if res.Trailer.Get("X-Checksum") != "abc" || res.Trailer.Get("X-Late") != "late" {
		t.Fatalf("trailers %v, want X-Checksum: abc and X-Late: late", res.Trailer)
	}
}

// A 103 Early Hints answer is passed on before the final one.
func TestForwardPassesEarlyHints(t *testing.T) {
	e := newEnv(t)
	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		io.WriteString(w, "final")
	}
	front := httptest.NewServer(e.proxy)
	defer front.Close()
	addr := strings.TrimPrefix(front.URL, "http://")
	conn := dial(t, addr)
	io.WriteString(conn, "GET /app HTTP/1.1\r\nHost: gate.example.com\r\nCookie: gatehouse_session="+e.signIn(sessionID)+"\r\nConnection: close\r\n\r\n")
	tp := textproto.NewReader(bufio.NewReader(conn))
	first, err := tp.ReadLine()
	if err != nil {
		t.Fatal(err)
	}
	hints, err := tp.ReadMIMEHeader()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first, "HTTP/1.1 103") || hints.Get("Link") != "</style.css>; rel=preload" {
		t.Fatalf("first answer %q %v, want 103 with the Link header", first, hints)
	}
	final, _ := tp.ReadLine()
	if !strings.HasPrefix(final, "HTTP/1.1 200") {
		t.Fatalf("final answer %q", final)
	}
}

// An upstream that switches protocols unasked gets a 502, not a hijack.
func TestForwardRefusesUnaskedUpgrade(t *testing.T) {
	e := newEnv(t)
	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Upgrade", "websocket")
		w.WriteHeader(http.StatusSwitchingProtocols)
	}
	res, err := e.getSignedIn(t, "/app")
	if err != nil {
		t.Fatal(err)
	}
	body(t, res)
	if res.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d, want 502", res.StatusCode)
	}
}

// Query parameters Go cannot parse are dropped, as ReverseProxy does, so
// that the upstream reads the query Gatehouse read.
func TestForwardCleansQuery(t *testing.T) {
	e := newEnv(t)
	cookie := "Cookie: gatehouse_session=" + e.signIn(sessionID) + "\r\n"
	front := httptest.NewServer(e.proxy)
	defer front.Close()
	addr := strings.TrimPrefix(front.URL, "http://")
	for target, want := range map[string]string{
		"/app?a=1&b=2":   "/app?a=1&b=2",
		"/app?a=1;b=2":   "/app", // one pair with a ";": none Go accepts
		"/app?a=%zz&b=2": "/app?b=2",
	} {
		res := rawRequest(t, addr, "GET", target, cookie)
		body(t, res)
		if got := e.upstream.last(t).RequestURI; got != want {
			t.Errorf("%s reached the upstream as %s, want %s", target, got, want)
		}
	}
}

// A body that breaks off mid-way aborts the answer: the client sees a
// broken connection, never a short body that looks complete (a chunked
// answer ended cleanly would look complete), and the log says so.
func TestForwardAbortsBrokenBody(t *testing.T) {
	e := newEnv(t)
	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "only part") // no length: chunked
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the upstream dies mid-body
	}
	res, err := e.getSignedIn(t, "/app")
	if err != nil {
		return // cut before the headers: no answer at all
	}
	defer res.Body.Close()
	if b, err := io.ReadAll(res.Body); err == nil {
		t.Fatalf("client read a complete body %q (status %d) from a broken upstream answer", b, res.StatusCode)
	}
	if !strings.Contains(e.logs.String(), "upstream answer cut short") {
		t.Fatalf("broken upstream body not logged; logs:\n%s", e.logs.String())
	}
}

// Outside an http.Server nothing recovers ErrAbortHandler: the handler
// returns instead of panicking, as ReverseProxy does (attack review).
func TestForwardBrokenBodyOutsideServer(t *testing.T) {
	e := newEnv(t)
	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		io.WriteString(w, "short")
	}
	defer func() {
		if v := recover(); v != nil {
			t.Fatalf("proxy panicked outside an http.Server: %v", v)
		}
	}()
	e.serve(withCookie(get("/app"), e.signIn(sessionID))).Body.Close()
}

// Request trailers never reach the upstream: the server fills them in
// after every header check, so they could carry a forged identity or the
// session cookie (attack review: PX1, SS8).
func TestForwardDropsRequestTrailers(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var got http.Header
	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		got = r.Trailer.Clone()
		mu.Unlock()
		io.WriteString(w, "ok")
	}
	front := httptest.NewServer(e.proxy)
	defer front.Close()
	id := e.signIn(sessionID)
	res := rawRequest(t, front.Listener.Addr().String(), "POST", "/app",
		"Cookie: gatehouse_session="+id+"\r\nTransfer-Encoding: chunked\r\n"+
			"Trailer: X-Forwarded-User, Cookie, X-Forwarded-Email\r\n\r\n"+
			"5\r\nhello\r\n0\r\nX-Forwarded-User: admin\r\nX-Forwarded-Email: admin@example.com\r\n"+
			"Cookie: gatehouse_session="+id+"\r\n") // rawRequest's "Connection: close" line and blank line end the trailer
	body(t, res)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 0 {
		t.Fatalf("upstream got request trailers %v", got)
	}
	if e.upstream.count() != 1 {
		t.Fatalf("upstream got %d requests, want 1", e.upstream.count())
	}
}

// With GODEBUG=urlmaxqueryparams, net/url applies that limit, and every
// query is encoded again, as ReverseProxy does (attack review).
func TestForwardQueryLimitFromGODEBUG(t *testing.T) {
	t.Setenv("GODEBUG", "urlmaxqueryparams=5")
	e := newEnv(t)
	q := "a=1&b=2&c=3&d=4&e=5&f=6&g=7&h=8"
	body(t, e.serve(withCookie(get("/app?"+q), e.signIn(sessionID))))
	if raw := e.upstream.last(t).RequestURI; strings.Contains(raw, q) {
		t.Fatalf("query over urlmaxqueryparams forwarded unchanged: %s", raw)
	}
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	return conn
}

// getSignedIn sends GET path, signed in, to the proxy behind a real server
// (so that the server's own handling of the answer counts).
func (e *env) getSignedIn(t *testing.T, path string) (*http.Response, error) {
	t.Helper()
	front := httptest.NewServer(e.proxy)
	t.Cleanup(front.Close)
	req, _ := http.NewRequest("GET", front.URL+path, nil)
	req.Header.Set("Cookie", "gatehouse_session="+e.signIn(sessionID))
	return http.DefaultClient.Do(req)
}

// An upstream cannot set the session cookie through an informational
// answer either (SS8): Set-Cookie lines of that name are dropped from a 103
// as from the final answer.
func TestForwardDropsSessionCookieFromEarlyHints(t *testing.T) {
	e := newEnv(t)
	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Set-Cookie", DefaultCookieName+"=forged; Path=/")
		w.Header().Add("Set-Cookie", "theme=dark")
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Set-Cookie")
		w.Header().Del("Link")
		io.WriteString(w, "final")
	}
	front := httptest.NewServer(e.proxy)
	defer front.Close()
	conn := dial(t, strings.TrimPrefix(front.URL, "http://"))
	io.WriteString(conn, "GET /app HTTP/1.1\r\nHost: gate.example.com\r\nCookie: gatehouse_session="+e.signIn(sessionID)+"\r\nConnection: close\r\n\r\n")
	tp := textproto.NewReader(bufio.NewReader(conn))
	if first, err := tp.ReadLine(); err != nil || !strings.HasPrefix(first, "HTTP/1.1 103") {
		t.Fatalf("first answer %q, %v; want a 103", first, err)
	}
	hints, err := tp.ReadMIMEHeader()
	if err != nil {
		t.Fatal(err)
	}
	if got := hints.Values("Set-Cookie"); len(got) != 1 || got[0] != "theme=dark" {
		t.Fatalf("103 carried Set-Cookie %q, want only theme=dark", got)
	}
}

// trailerCookieUpstream sends the session cookie in a trailer after the
// body, announced ("Trailer: Set-Cookie") or not (http.TrailerPrefix).
func trailerCookieUpstream(announced bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if announced {
			w.Header().Set("Trailer", "Set-Cookie")
		}
		io.WriteString(w, "payload")
		w.(http.Flusher).Flush()
		forged := DefaultCookieName + "=forged; Path=/"
		if announced {
			w.Header().Add("Set-Cookie", forged)
			w.Header().Add("Set-Cookie", "theme=dark")
		} else {
			w.Header()[http.TrailerPrefix+"Set-Cookie"] = []string{forged, "theme=dark"}
		}
	}
}

// Nor through a trailer (SS8): the session cookie's Set-Cookie lines are
// dropped from the trailers too, announced or not; other cookies pass.
func TestForwardDropsSessionCookieFromTrailers(t *testing.T) {
	for _, announced := range []bool{true, false} {
		t.Run(fmt.Sprint("announced=", announced), func(t *testing.T) {
			e := newEnv(t)
			e.upstream.handler = trailerCookieUpstream(announced)
			res, err := e.getSignedIn(t, "/app")
			if err != nil {
				t.Fatal(err)
			}
			if b := body(t, res); b != "payload" {
				t.Fatalf("body %q", b)
			}
			if got := res.Trailer.Values("Set-Cookie"); len(got) != 1 || got[0] != "theme=dark" {
				t.Fatalf("trailer Set-Cookie %q, want only theme=dark", got)
			}
		})
	}
}

// The forwarding state is reused from request to request: an anonymous
// request after a signed-in one, serially or side by side, reaches the
// upstream as from nobody, and each signed-in one with its own identity.
func TestForwardIdentityIsPerRequest(t *testing.T) {
	e := newEnv(t)
	e.signIn(sessionID)
	identityNames := []string{"X-Forwarded-User", "X-Forwarded-Email", "X-Forwarded-Groups", AssertionHeader}
	e.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		signedIn := r.URL.Query().Get("who") == "user"
		for _, h := range identityNames {
			_, got := r.Header[h]
			if want := signedIn && h != "X-Forwarded-Groups" && h != AssertionHeader; got != want {
				t.Errorf("%s: upstream has %s: %v, want %v", r.URL, h, got, want)
			}
		}
		if signedIn && r.Header.Get("X-Forwarded-User") != userID {
			t.Errorf("%s: X-Forwarded-User %q", r.URL, r.Header.Get("X-Forwarded-User"))
		}
		io.WriteString(w, "ok")
	}
	request := func(i int) {
		r := get(fmt.Sprintf("/public/x?who=nobody&i=%d", i))
		if i%2 == 0 {
			r = withCookie(get(fmt.Sprintf("/public/x?who=user&i=%d", i)), sessionID)
		}
		if res := e.serve(r); res.StatusCode != http.StatusOK {
			t.Errorf("request %d: status %d", i, res.StatusCode)
		}
	}
	for i := range 20 {
		request(i)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() { request(i) })
	}
	wg.Wait()
}
