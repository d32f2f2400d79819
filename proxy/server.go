package proxy

import (
	"net/http"
	"time"
)

// Server limits (PX6, PX7).
const (
	ReadHeaderTimeout = 10 * time.Second
	IdleTimeout       = 120 * time.Second
	MaxHeaderBytes    = 64 << 10
)

// NewServer returns the server for the proxy listener: slow header senders
// are cut after ReadHeaderTimeout, idle keep-alive connections after
// IdleTimeout, and request headers are capped at MaxHeaderBytes (431).
// There is deliberately no ReadTimeout or WriteTimeout: they would cut long
// uploads, streamed responses and WebSockets. "OPTIONS *" goes to h like any
// request (net/http would answer it itself, without the handler's headers:
// HSTS, the request id).
func NewServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:                         addr,
		Handler:                      h,
		ReadHeaderTimeout:            ReadHeaderTimeout,
		IdleTimeout:                  IdleTimeout,
		MaxHeaderBytes:               MaxHeaderBytes,
		DisableGeneralOptionsHandler: true,
	}
}
