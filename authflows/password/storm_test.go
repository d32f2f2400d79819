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

// Under contention the rest is the hash's work on a core by itself, not its
// time stretched by a loaded machine: a hash slowed down by sharing its
// core rests no longer than the same hash took when the hasher was made.
func TestHasherRestIsTheWorkNotTheWait(t *testing.T) {
	h, rests := oneSlotHasher(t)
	h.unitCost = time.Nanosecond // the hash "by itself": memory × passes ns
	h.slots <- struct{}{}
	results := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := h.Hash(context.Background(), "a contended password")
			results <- err
		}()
	}
	for h.Waiting() != 2 {
		time.Sleep(time.Millisecond)
	}
	<-h.slots
	if err := receive(t, results, "the first waiter's answer"); err != nil {
		t.Fatal(err)
	}
	r := receive(t, rests, "the rest")
	if want := time.Duration(testHashParams.Memory) * time.Duration(testHashParams.Time); r.d > want {
		t.Errorf("rest of %v, want at most the work by itself, %v", r.d, want)
	}
	r.release()
	if err := receive(t, results, "the second waiter's answer"); err != nil {
		t.Fatal(err)
	}
}
