package proxy

import (
	"io"
	"net/http"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// AuthBodyTimeout bounds the time to read a request body under /auth/
// (PX6): a body trickled a byte at a time cannot hold a connection and a
// handler for longer. Proxied bodies are not bounded: uploads may be slow.
const AuthBodyTimeout = 10 * time.Second

// serveAuth hands r to the auth handler with its body capped at
// web.MaxAuthBody (PX6): a larger declared length is answered here, a longer
// chunked body fails the handler's read, which answers web.BodyTooLarge too;
// and the body must arrive within AuthBodyTimeout.
func (p *Proxy) serveAuth(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > web.MaxAuthBody {
		web.WriteProblem(w, r, web.BodyTooLarge)
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		withBodyDeadline(w, r, p.authBodyTimeout)
		r.Body = http.MaxBytesReader(w, r.Body, web.MaxAuthBody)
	}
	p.auth.ServeHTTP(w, r)
}

// deadlineBody is a request body read under a connection read deadline. The
// deadline is lifted once the body is read to its end, so the server's watch
// for a closed connection does not time out while the handler is still
// working. After a failed read it stays: the server closes the connection
// and its attempt to drain the rest of the body must not wait forever.
type deadlineBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	lifted bool
}

// withBodyDeadline puts r's body under a read deadline of timeout from now.
// When the connection cannot take a deadline (HTTP/2 streams can, tests'
// recorders cannot), the body is left as it is.
func withBodyDeadline(w http.ResponseWriter, r *http.Request, timeout time.Duration) {
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(timeout)) != nil {
		return
	}
	r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.lifted {
		b.lifted = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
