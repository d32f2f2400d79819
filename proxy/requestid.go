package proxy

import (
	"math/rand/v2"
	"net/http"
)

// RequestIDHeader carries the id that ties the log lines of one request
// together (LG2): the auth flows log it with their events, and the
// upstream receives it to log it too.
const RequestIDHeader = "X-Request-Id"

// maxRequestIDLen bounds an id passed on by a trusted proxy.
const maxRequestIDLen = 128

// setRequestID makes sure r carries exactly one X-Request-Id. A well-formed
// id passed on by a trusted proxy (a load balancer that assigned it) is
// kept; anything else, including every id a client sends directly, is
// replaced by a new random one, so clients cannot choose or reuse the ids
// that the logs are correlated by.
func (p *Proxy) setRequestID(r *http.Request) {
	if v := r.Header[RequestIDHeader]; len(v) == 1 && validRequestID(v[0]) && p.peerTrusted(r) {
		return
	}
	r.Header[RequestIDHeader] = []string{newRequestID()}
}

// newRequestID returns 128 random bits as 32 lowercase hex characters. The
// id is not a secret, only unique, so the runtime's fast generator serves.
func newRequestID() string {
	const digits = "0123456789abcdef"
	var b [32]byte
	for half := range 2 {
		n := rand.Uint64()
		for i := range 16 {
			b[half*16+i] = digits[n&0xf]
			n >>= 4
		}
	}
	return string(b[:])
}

// validRequestID accepts 1 to maxRequestIDLen characters of the sets that
// UUIDs, hex, base64 and the usual load-balancer formats use.
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '_', c == '.', c == ':', c == '+', c == '/', c == '=':
		default:
			return false
		}
	}
	return true
}

// requestID is the id setRequestID gave r.
func requestID(r *http.Request) string {
	if v := r.Header[RequestIDHeader]; len(v) > 0 {
		return v[0]
	}
	return ""
}
