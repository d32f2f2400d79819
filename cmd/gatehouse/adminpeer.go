package main

import (
	"net"
	"os"
)

// peerListener serves the admin socket only to peers running as the
// server's user or as root (AD1), as the kernel reports them, so that a
// socket whose mode was widened after the start still admits nobody else.
// Where the system does not report peers, the file mode alone decides.
type peerListener struct {
	net.Listener
	allow    func(uid uint32) bool
	onRefuse func(uid uint32) // nil: silent
}

func newPeerListener(ln net.Listener) *peerListener {
	server := uint32(os.Geteuid())
	return &peerListener{Listener: ln, allow: func(uid uint32) bool { return peerAllowed(uid, server) }}
}

// peerAllowed: the server's own user, or root.
func peerAllowed(peer, server uint32) bool { return peer == server || peer == 0 }

// Accept returns the next connection of an allowed peer; others are closed.
func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid, known := peerUID(c)
		if !known || l.allow(uid) {
			return c, nil
		}
		_ = c.Close()
		if l.onRefuse != nil {
			l.onRefuse(uid)
		}
	}
}
