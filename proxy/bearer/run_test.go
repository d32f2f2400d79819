package bearer

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// Run writes the recorded last uses when it stops, so a shutdown loses
// none, and fetches each issuer's key set at start, off the request path.
func TestRunFlushesAtStopAndPrefetchesKeySets(t *testing.T) {
	e := newTokenEnv(t)
	idp := newTestIdP(t)
	v, err := New(Config{Tokens: e.counted, Clock: e.clock.Now, Issuers: []string{idp.Issuer()}, Audience: testAudience})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- v.Run(ctx) }()

	deadline := time.Now().Add(10 * time.Second)
	for idp.jwksHits.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("Run did not fetch the key set at start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := v.Verify(t.Context(), bearer(e.mine)); err != nil {
		t.Fatal(err)
	}
	used := e.clock.Now()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	tok, _, err := e.store.APITokenByHash(t.Context(), storage.HashSecret(e.mine))
	if err != nil || !tok.LastUsed.Equal(used) {
		t.Fatalf("after Run stopped: last used %v (%v), want %v", tok.LastUsed, err, used)
	}
	if n := idp.jwksHits.Load(); n != 1 {
		t.Fatalf("%d key set fetches, want 1", n)
	}
}
