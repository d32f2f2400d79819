package proxy

import (
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/gatehouse-auth/gatehouse/proxy/session"
)

// send forwards a request that asks for no protocol upgrade: the upstream
// request is built once from the inbound one, sent with the transport, and
// the answer copied back. It does what httputil.ReverseProxy with rewrite
// does for such a request (hop-by-hop headers dropped both ways, "Te:
// trailers" kept, forwarding headers set by setUpstreamHeaders, query
// parameters it cannot parse dropped, 1xx answers passed on, trailers
// copied, streamed answers flushed as they come, a broken body aborting the
// answer) without the copies ReverseProxy makes on the way: one shallow copy
// of the request instead of three, no header map cloned and then grown, no
// header deleted after being copied. That is 7 allocations and about 2 µs
// a request in BenchmarkOverhead (issue 17). WebSocket upgrades, the
// one kind that may upgrade (UP1), still go through p.reverse.
func (p *Proxy) send(w http.ResponseWriter, in *http.Request, state *forwardState) {
	state.w, state.cookieName = w, p.cookieName
	state.trace.Got1xxResponse = state.got1xx
	out := in.WithContext(httptrace.WithClientTrace(state, &state.trace))
	u := *in.URL
	u.RawQuery = cleanQueryParams(u.RawQuery) // the client's query only, as ReverseProxy
	out.URL = &u
	(&httputil.ProxyRequest{In: in, Out: out}).SetURL(p.upstream)
	out.Header = p.upstreamHeader(in, state)
	// Request trailers are not forwarded: the server fills in.Trailer
	// once the body is read, after every header check (PX1, SS8).
	// ReverseProxy's copy of the map dropped their values too.
	out.Trailer = nil
	out.Close = false
	out.RequestURI = ""
	if in.ContentLength == 0 {
		out.Body = nil // as ReverseProxy: a nil body lets the transport retry
	}
	if out.Body != nil {
		// The transport may close the body it was given when it fails;
		// the inbound body is the server's to close.
		body := &noopCloseReader{r: in.Body}
		out.Body = body
		defer body.Close()
	}

	res, err := p.transport.RoundTrip(out)
	state.mu.Lock()
	state.roundTripDone = true // no 1xx is written from here on
	state.mu.Unlock()
	if err != nil {
		p.upstreamError(w, out, err)
		return
	}
	if res.StatusCode == http.StatusSwitchingProtocols { // not asked for
		res.Body.Close()
		p.upstreamError(w, out, errUnaskedUpgrade)
		return
	}
	removeHopByHopHeaders(res.Header)
	_ = p.modifyResponse(res)
	dst := w.Header()
	for k, vv := range res.Header {
		if old, ok := dst[k]; ok {
			dst[k] = append(old, vv...)
		} else {
			dst[k] = vv
		}
	}
	announced := len(res.Trailer)
	if announced > 0 {
		keys := make([]string, 0, announced)
		for k := range res.Trailer {
			keys = append(keys, k)
		}
		dst.Add("Trailer", strings.Join(keys, ", "))
	}
	w.WriteHeader(res.StatusCode)

	if err := copyBody(w, res, streamed(res)); err != nil {
		res.Body.Close()
		p.logger.LogAttrs(in.Context(), slog.LevelWarn, "upstream answer cut short",
			slog.String("method", in.Method), slog.String("path", in.URL.Path),
			slog.String("request_id", requestID(in)), slog.String("error", err.Error()))
		// Only aborting the answer tells the client it is cut short; the
		// server recovers this panic. Outside one (a caller's own
		// handler chain), return as ReverseProxy does.
		if in.Context().Value(http.ServerContextKey) != nil {
			panic(http.ErrAbortHandler)
		}
		return
	}
	res.Body.Close()                                  // now: it fills res.Trailer
	session.DropSetCookies(res.Trailer, p.cookieName) // nor through a trailer (SS8)
	if len(res.Trailer) > 0 {
		// Chunked, so that the server does not compute a length and
		// drop the trailers.
		_ = http.NewResponseController(w).Flush()
	}
	if len(res.Trailer) == announced {
		for k, vv := range res.Trailer {
			dst[k] = append(dst[k], vv...)
		}
		return
	}
	for k, vv := range res.Trailer {
		for _, v := range vv {
			dst.Add(http.TrailerPrefix+k, v)
		}
	}
}

var errUnaskedUpgrade = errors.New("proxy: the upstream switched protocols without being asked")

// got1xx passes an informational answer (103 Early Hints, say) on to the
// client while the final one is awaited, as ReverseProxy does; like the
// final answer, without Set-Cookie lines of the session cookie (SS8).
func (s *forwardState) got1xx(code int, header textproto.MIMEHeader) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.roundTripDone {
		return nil
	}
	h := s.w.Header()
	for k, vv := range header {
		h[k] = append(h[k], vv...) // h's own lines: filtered in place below
	}
	session.DropSetCookies(h, s.cookieName)
	s.w.WriteHeader(code)
	clear(h) // WriteHeader does not clear them for a 1xx
	return nil
}

// upstreamHeader is the header of the upstream request: the inbound one
// without hop-by-hop headers (those of RFC 9110 section 7.6.1 and those its
// Connection header names), without the client's Forwarded and
// X-Forwarded-For/-Host/-Proto, then completed by setUpstreamHeaders. Values
// are shared with the inbound request, which nothing changes afterwards;
// the Cookie line that loses the session cookie is a new one.
func (p *Proxy) upstreamHeader(in *http.Request, state *forwardState) http.Header {
	h := make(http.Header, len(in.Header)+8) // room for what setUpstreamHeaders adds: no growth
	for k, vv := range in.Header {
		switch k {
		case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
			"Te", "Trailer", "Transfer-Encoding", "Upgrade",
			"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto":
			continue
		case "Cookie":
			vv = append([]string(nil), vv...) // removeCookie edits lines in place
		}
		h[k] = vv
	}
	for _, f := range in.Header["Connection"] {
		for sf := range strings.SplitSeq(f, ",") {
			if sf = textproto.TrimString(sf); sf != "" {
				h.Del(sf)
			}
		}
	}
	// Tell the upstream that trailers are welcome when the client said so
	// (ReverseProxy: Go issue 21096).
	if containsToken(in.Header["Te"], "trailers") {
		h["Te"] = teTrailers
	}
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = emptyValue // not Go's default User-Agent
	}
	p.setUpstreamHeaders(h, in, state)
	return h
}

// containsToken reports whether a comma-separated list among values holds
// token, compared case-insensitively.
func containsToken(values []string, token string) bool {
	for _, v := range values {
		for t := range strings.SplitSeq(v, ",") {
			if t, _, _ = strings.Cut(t, ";"); strings.EqualFold(textproto.TrimString(t), token) {
				return true
			}
		}
	}
	return false
}

var (
	teTrailers = []string{"trailers"}
	emptyValue = []string{""}
)

// removeHopByHopHeaders drops the hop-by-hop headers of an answer, as
// ReverseProxy does.
func removeHopByHopHeaders(h http.Header) {
	for _, f := range h["Connection"] {
		for sf := range strings.SplitSeq(f, ",") {
			if sf = textproto.TrimString(sf); sf != "" {
				h.Del(sf)
			}
		}
	}
	for _, k := range [...]string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
		"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"} {
		delete(h, k)
	}
}

// streamed reports whether an answer is flushed as it comes rather than
// buffered: server-sent events, and bodies of unknown length (ReverseProxy's
// flushInterval of -1).
func streamed(res *http.Response) bool {
	if res.ContentLength == -1 {
		return true
	}
	ct := res.Header["Content-Type"]
	return len(ct) > 0 && isEventStream(ct[0])
}

// isEventStream reports whether a Content-Type names text/event-stream, as
// mime.ParseMediaType reads it. Most answers name something else, so only a
// value that holds "event-stream" (in any case) or a byte outside ASCII,
// which ParseMediaType's Unicode lowering and trimming could turn into one,
// is parsed: the common answer costs a scan, not a map and its strings.
func isEventStream(ct string) bool {
	const name = "event-stream"
	parse := false
	for i := 0; i < len(ct) && !parse; i++ {
		c := ct[i]
		parse = c >= utf8.RuneSelf ||
			c|0x20 == 'e' && len(ct)-i >= len(name) && strings.EqualFold(ct[i:i+len(name)], name)
	}
	if !parse {
		return false
	}
	base, _, _ := mime.ParseMediaType(ct)
	return base == "text/event-stream"
}

// copyBody copies the answer's body with a pooled buffer; when streamed, the
// headers go out at once and every piece is flushed as it is written. It
// returns write errors and read errors other than EOF.
func copyBody(w http.ResponseWriter, res *http.Response, streamed bool) error {
	var flusher http.Flusher
	if streamed {
		flusher, _ = w.(http.Flusher)
		if flusher != nil {
			flusher.Flush()
		}
	}
	buf := copyBuffers.Get().(*[copyBufferSize]byte)
	defer copyBuffers.Put(buf)
	for {
		n, rerr := res.Body.Read(buf[:])
		if n > 0 {
			written, werr := w.Write(buf[:n])
			if werr != nil {
				return werr
			}
			if written != n {
				return io.ErrShortWrite
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		switch {
		case rerr == io.EOF:
			return nil
		case rerr != nil:
			return rerr
		}
	}
}

// cleanQueryParams drops the query parameters that Go's URL parser refuses
// (a ";" separator, a bad escape) by encoding again what it accepts, so
// that the upstream and Gatehouse read the same query; as ReverseProxy.
func cleanQueryParams(s string) string {
	reencode := func(s string) string {
		v, _ := url.ParseQuery(s)
		return v.Encode()
	}
	if s == "" {
		return s
	}
	if queryLimitSet() || strings.Count(s, "&")+1 > maxQueryParams {
		return reencode(s)
	}
	for i := 0; i < len(s); {
		switch s[i] {
		case ';':
			return reencode(s)
		case '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return reencode(s)
			}
			i += 3
		default:
			i++
		}
	}
	return s
}

// maxQueryParams is net/url's default limit of query parameters.
const maxQueryParams = 10000

// queryLimitSet: GODEBUG sets another limit (urlmaxqueryparams), which
// net/url applies; then, as ReverseProxy does, every query is encoded again.
// It is read on each call, as net/url reads it.
func queryLimitSet() bool {
	for setting := range strings.SplitSeq(os.Getenv("GODEBUG"), ",") {
		if k, v, _ := strings.Cut(strings.TrimSpace(setting), "="); k == "urlmaxqueryparams" && v != "" {
			return true
		}
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// noopCloseReader is the inbound body as the transport sees it: closing it
// does not close the inbound body, and reading after that fails.
type noopCloseReader struct {
	r      io.ReadCloser
	mu     sync.Mutex
	closed bool
}

func (b *noopCloseReader) Read(p []byte) (int, error) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return 0, errors.New("proxy: read of the request body after it was closed")
	}
	return b.r.Read(p)
}

func (b *noopCloseReader) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}
