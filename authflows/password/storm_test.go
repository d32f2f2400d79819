package password

import (
	"context"
	"testing"
	"time"
)

// A sign-in storm (many people at once, each hash a real one) queues
// longer than the old 2 s on a small machine: a person behind the queue
// should wait a few seconds, not be answered 503 busy. With the production
// limits, a call that finds the one slot taken for longer than that still
// gets it when it frees.
func TestQueuedHashOutwaitsAShortStorm(t *testing.T) {
	h := NewLimitedHasher(HashParams{Memory: 64, Time: 1, Threads: 1}, Limits{Slots: 1})
	release, err := h.Hold(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := h.Hash(context.Background(), "a queued password")
		done <- err
	}()
	for h.Waiting() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(3 * time.Second) // the storm ahead of it
	release()
	if err := <-done; err != nil {
		t.Errorf("a hash queued behind a 3 s storm: %v, want it hashed", err)
	}
}
