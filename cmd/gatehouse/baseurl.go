package main

import (
	"net"
	"strconv"
)

// defaultBaseURL is the base URL when --base-url is not given: the first
// --tls-domain over HTTPS, or else http://localhost on the port of
// --listen, so that `--listen :9000` sends users to port 9000, not 8080.
// Where no such guess can be right it asks for --base-url.
func defaultBaseURL(c *Config) (string, error) {
	if len(c.TLS.Domains) > 0 {
		return "https://" + c.TLS.Domains[0], nil
	}
	if c.TLS.CertFile != "" {
		return "", flagError("base-url", "is required with --tls-cert: set it to the https:// address users open")
	}
	_, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return "", flagError("listen", "%q is not host:port", c.Listen)
	}
	n, err := net.LookupPort("tcp", port)
	if err != nil || n == 0 {
		return "", flagError("base-url", "is required: --listen %s has no fixed port to derive it from; set --base-url to the address users open", c.Listen)
	}
	if n == 80 {
		return "http://localhost", nil
	}
	return "http://localhost:" + strconv.Itoa(n), nil
}
