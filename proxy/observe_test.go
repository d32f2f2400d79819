package proxy

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

// One access line per request: method, cleaned path without the query,
// status, bytes, duration, user id, request id and client IP.
func TestAccessLogLine(t *testing.T) {
	out := &syncBuffer{}
	access := NewAccessLog(out, false)
	e := newEnv(t, func(c *Config) { c.AccessLog = access })
	id := e.signIn(sessionID)

	e.serve(withCookie(get("/app/../app/page?token=SECRET-QUERY"), id))
	e.serve(get("/private"))
	e.serve(get("/auth/login"))
	access.Flush()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d access lines, want 3:\n%s", len(lines), out)
	}
	for _, want := range []string{"msg=access method=GET path=/app/page status=200 bytes=", " user_id=" + userID, " client_ip=192.0.2.1", " duration_ms="} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("forwarded line lacks %q: %s", want, lines[0])
		}
	}
	if !strings.Contains(lines[0], " request_id=") || strings.Contains(lines[0], "request_id= ") {
		t.Errorf("no request id: %s", lines[0])
	}
	if strings.Contains(out.String(), "SECRET-QUERY") || strings.Contains(out.String(), sessionID) {
		t.Errorf("the query or the session id is in the access log:\n%s", out)
	}
	if !strings.Contains(lines[1], "path=/private status=302 ") || !strings.Contains(lines[1], `user_id="" `) {
		t.Errorf("denied line: %s", lines[1])
	}
	if !strings.Contains(lines[2], "path=/auth/login status=200") {
		t.Errorf("auth line: %s", lines[2])
	}
}

// LG3: a path cannot forge a field or a line, in either format.
func TestAccessLogEscapes(t *testing.T) {
	entry := accessEntry{start: time.Unix(0, 0), method: "GET", path: "/a b\nlevel=ERROR msg=\"forged\"\xff",
		status: 200, bytes: 5, duration: 1500 * time.Microsecond, requestID: "r1", clientIP: netip.MustParseAddr("192.0.2.1")}
	for _, jsonFormat := range []bool{false, true} {
		a := NewAccessLog(nil, jsonFormat)
		line := string(a.format(nil, &entry))
		if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
			t.Errorf("json=%v: not one line: %q", jsonFormat, line)
		}
		if jsonFormat {
			var v map[string]any
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				t.Fatalf("not JSON: %q: %v", line, err)
			}
			if v["path"] != "/a b\nlevel=ERROR msg=\"forged\"\ufffd" || v["status"] != 200.0 || v["duration_ms"] != 1.5 || v["client_ip"] != "192.0.2.1" {
				t.Errorf("decoded %v", v)
			}
		} else if !strings.Contains(line, ` path="/a b\nlevel=ERROR msg=\"forged\"\xff" status=200 bytes=5 duration_ms=1.500 `) {
			t.Errorf("text line %q", line)
		}
	}
}

// The access log and the observation add no allocation per request beyond
// what the proxy already makes.
func TestAccessLogAllocations(t *testing.T) {
	a := NewAccessLog(discard{}, false)
	entry := accessEntry{start: time.Now(), method: "GET", path: "/app/page", status: 200, bytes: 2,
		duration: time.Millisecond, userID: userID, requestID: "0123456789abcdef0123456789abcdef", clientIP: netip.MustParseAddr("192.0.2.1")}
	a.write(&entry) // warm the pool
	if n := testing.AllocsPerRun(1000, func() { a.write(&entry); a.Flush() }); n > 0 {
		t.Errorf("%v allocations per access line, want 0", n)
	}
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

// The duration histogram counts by outcome and status class; the in-flight
// gauge is back at zero after the requests.
func TestDurationAndInFlightMetrics(t *testing.T) {
	e := newEnv(t)
	id := e.signIn(sessionID)
	e.serve(withCookie(get("/app"), id))
	e.serve(withCookie(get("/app"), id))
	e.serve(get("/app"))
	r := get("/app")
	r.Method = http.MethodPost
	e.serve(r)
	e.serve(get("/auth/login"))
	families, err := e.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	var inFlight float64 = -1
	for _, mf := range families {
		switch mf.GetName() {
		case "gatehouse_http_request_duration_seconds":
			for _, m := range mf.GetMetric() {
				var key []string
				for _, l := range m.GetLabel() {
					key = append(key, l.GetName()+"="+l.GetValue())
				}
				if c := m.GetHistogram().GetSampleCount(); c > 0 {
					counts[strings.Join(key, ",")] = c
				}
			}
		case "gatehouse_http_requests_in_flight":
			inFlight = mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	want := map[string]uint64{
		"code=2xx,outcome=forwarded":       2,
		"code=3xx,outcome=redirected":      1,
		"code=4xx,outcome=unauthenticated": 1,
		"code=2xx,outcome=auth":            1,
	}
	if len(counts) != len(want) {
		t.Errorf("histogram series %v, want %v", counts, want)
	}
	for k, v := range want {
		if counts[k] != v {
			t.Errorf("%s: %d observations, want %d (all: %v)", k, counts[k], v, counts)
		}
	}
	if inFlight != 0 {
		t.Errorf("in-flight gauge %v after the requests, want 0", inFlight)
	}
}

func TestAccessLogTimeAndDurationForms(t *testing.T) {
	at := time.Date(2026, 11, 26, 4, 5, 6, 789_123_456, time.FixedZone("x", 3600))
	if got := string(appendTime(nil, at)); got != "2026-11-26T03:05:06.789Z" {
		t.Errorf("appendTime = %q", got)
	}
	for d, want := range map[time.Duration]string{0: "0.000", 1500 * time.Microsecond: "1.500", 12*time.Second + 34*time.Microsecond: "12000.034", -1: "0.000"} {
		if got := string(appendMillis(nil, d)); got != want {
			t.Errorf("appendMillis(%v) = %q, want %q", d, got, want)
		}
	}
}

// A response whose upstream body breaks off (ReverseProxy then aborts the
// handler with a panic) leaves the in-flight gauge where it was.
func TestInFlightAfterAbortedResponse(t *testing.T) {
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	defer broken.Close()
	upURL, _ := url.Parse(broken.URL)
	e := newEnv(t, func(c *Config) { c.Upstream = upURL })
	front := httptest.NewUnstartedServer(e.proxy)
	front.Config.ErrorLog = log.New(io.Discard, "", 0)
	front.Start()
	defer front.Close()
	id := e.signIn(sessionID)
	req, _ := http.NewRequest(http.MethodGet, front.URL+"/app", nil)
	req.Header.Set("Cookie", DefaultCookieName+"="+id)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	families, err := e.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() == "gatehouse_http_requests_in_flight" {
			if v := mf.GetMetric()[0].GetGauge().GetValue(); v != 0 {
				t.Fatalf("in-flight gauge %v after an aborted response, want 0", v)
			}
			return
		}
	}
	t.Fatal("no in-flight gauge")
}
