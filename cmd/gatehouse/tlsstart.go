package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// httpListenError explains a failed bind of --http-listen: that --tls-domain
// implied :80 when the flag was not given, and what to do about it.
func httpListenError(t TLSConfig, err error) error {
	what := "--http-listen " + t.HTTPListen
	if t.HTTPListenImplied {
		what += " (implied by --tls-domain, for ACME HTTP-01 challenges and the redirect to HTTPS)"
	}
	hint := "set --http-listen to a free address"
	switch {
	case errors.Is(err, syscall.EACCES):
		hint = "ports below 1024 need privileges: set --http-listen to a port above 1023 that port 80 is forwarded to, " +
			"or give the binary CAP_NET_BIND_SERVICE (setcap cap_net_bind_service=+ep gatehouse; AmbientCapabilities= in systemd)"
	case errors.Is(err, syscall.EADDRINUSE):
		hint = "another server holds that port: stop it, or set --http-listen to another address"
	}
	return fmt.Errorf("%s: %w; %s", what, err, hint)
}

// checkCreatableDir reports whether MkdirAll(dir) could succeed, without
// creating anything: dir is a directory, or its closest existing ancestor
// is a directory.
func checkCreatableDir(dir string) error {
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("%s is not a directory", p)
			}
			return nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if parent := filepath.Dir(p); parent == p {
			return nil
		}
	}
}
