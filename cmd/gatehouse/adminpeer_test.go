package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// AD1 beyond the file mode: the admin socket serves only connections whose
// peer runs as the server's user or as root, even when someone widened the
// socket's mode afterwards. (The kernel tells the peer's uid; a test cannot
// connect as another user, so it checks the rule with the server's uid
// taken for someone else's.)
func TestAdminSocketChecksThePeer(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "a.sock")
	ln, err := listenAdminSocket(sock)
	if err != nil {
		t.Fatal(err)
	}
	pl, ok := ln.(*peerListener)
	if !ok {
		t.Fatalf("listenAdminSocket returned a %T, not a peer-checking listener", ln)
	}
	// The real rule first; then, to see a refusal, one that refuses
	// everybody, recording the uid the kernel reported.
	var refuseAll atomic.Bool
	asked, refused := make(chan uint32, 4), make(chan uint32, 4)
	rule := pl.allow
	pl.allow = func(uid uint32) bool {
		if refuseAll.Load() {
			asked <- uid
			return false
		}
		return rule(uid)
	}
	pl.onRefuse = func(uid uint32) { refused <- uid }
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	// Widened by an operator: the file mode no longer keeps others out.
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}, DisableKeepAlives: true}}
	get := func() error {
		res, err := client.Get("http://gatehouse/")
		if err == nil {
			res.Body.Close()
		}
		return err
	}
	if err := get(); err != nil {
		t.Fatalf("the server's own user was refused: %v", err)
	}
	refuseAll.Store(true)
	if err := get(); err == nil {
		t.Fatal("a refused peer was served")
	}
	me := uint32(os.Geteuid())
	if uid := <-asked; uid != me {
		t.Fatalf("the rule was asked about uid %d, want the peer's %d", uid, me)
	}
	if uid := <-refused; uid != me {
		t.Fatalf("refusal reported for uid %d, want %d", uid, me)
	}
}

func TestAdminPeerRule(t *testing.T) {
	for _, tc := range []struct {
		peer, server uint32
		want         bool
	}{
		{1000, 1000, true},  // the server's user
		{0, 1000, true},     // root
		{1001, 1000, false}, // anyone else
		{1000, 0, false},    // a user, to a server run as root
		{0, 0, true},
	} {
		if got := peerAllowed(tc.peer, tc.server); got != tc.want {
			t.Errorf("peerAllowed(%d, %d) = %v, want %v", tc.peer, tc.server, got, tc.want)
		}
	}
}
