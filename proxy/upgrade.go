package proxy

import (
	"net/http"
	"strings"
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
