package main

import (
	"net"
	"syscall"
)

// peerUID is the uid of the process at the other end of a Unix socket
// connection (SO_PEERCRED), known=false when it cannot be read.
func peerUID(c net.Conn) (uid uint32, known bool) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, false
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil || credErr != nil {
		return 0, false
	}
	return cred.Uid, true
}
