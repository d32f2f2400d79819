package proxy

import (
	"io"
	"net/http"
	"strings"

	"github.com/gatehouse-auth/gatehouse/proxy/session"
)

// Protocol upgrades (UP1).
//
// httputil.ReverseProxy tunnels any upgrade the upstream accepts: after the
// 101 the connection is a raw byte pipe, so an "Upgrade: h2c" would let the
// client speak HTTP/2 straight to the upstream, past the header scrubbing
// and the session check of every later request on it. Only WebSocket is
// let through: its frames are messages of the one request that was checked.
// The upgrade request itself goes through the same gate as any request, so
// it passes only where the same request without the upgrade would.
//
// Any other upgrade is not refused but ignored, as RFC 9110 allows a server
// to: the Upgrade header (and h2c's HTTP2-Settings) is removed and the
// request is served as plain HTTP/1.1.

// dropUpgrade removes a request's Upgrade unless it is a WebSocket
// handshake (GET, "Upgrade: websocket" alone).
func dropUpgrade(r *http.Request) {
	up, ok := r.Header["Upgrade"]
	if !ok {
		return
	}
	if r.Method == http.MethodGet && len(up) == 1 && strings.EqualFold(strings.TrimSpace(up[0]), "websocket") {
		return
	}
	delete(r.Header, "Upgrade")
	delete(r.Header, "Http2-Settings")
}

// upgradeWriter is the response writer ReverseProxy gets for a WebSocket
// handshake. ReverseProxy passes on the 1xx answers the upstream sends
// before its 101 by writing them to it; those lose the Set-Cookie lines of
// the session cookie here, as the 101 and every other answer do (SS8).
type upgradeWriter struct {
	http.ResponseWriter
	cookieName string
}

func (w *upgradeWriter) WriteHeader(code int) {
	if code < http.StatusOK {
		session.DropSetCookies(w.Header(), w.cookieName)
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach Hijack, which the 101 needs.
func (w *upgradeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// modifyUpgradeResponse is ReverseProxy's ModifyResponse (the WebSocket
// path): modifyResponse, and for an upstream that refuses the upgrade with
// an ordinary answer, the trailers filtered as well once the body is read
// (SS8). ReverseProxy copies the trailers after closing the body; the
// transport fills them in only when the body ends.
func (p *Proxy) modifyUpgradeResponse(res *http.Response) error {
	_ = p.modifyResponse(res)
	if res.StatusCode != http.StatusSwitchingProtocols && res.Body != nil && res.Body != http.NoBody {
		res.Body = &trailerFilter{ReadCloser: res.Body, res: res, cookieName: p.cookieName}
	}
	return nil
}

// trailerFilter drops the session cookie's Set-Cookie lines from res's
// trailers when the body is closed.
type trailerFilter struct {
	io.ReadCloser
	res        *http.Response
	cookieName string
}

func (b *trailerFilter) Close() error {
	err := b.ReadCloser.Close()
	session.DropSetCookies(b.res.Trailer, b.cookieName)
	return err
}

// modifyResponse drops any Set-Cookie of the session cookie's name, so the
// upstream can neither plant nor clear a Gatehouse session (SS8).
func (p *Proxy) modifyResponse(res *http.Response) error {
	session.DropSetCookies(res.Header, p.cookieName)
	return nil
}
