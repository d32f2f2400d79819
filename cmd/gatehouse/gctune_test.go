package main

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		want        int
	}{
		{0, 32 * mib, 3100},        // under 1 MiB counts as 1 MiB
		{1 * mib, 32 * mib, 3100},  // goal 32 MiB
		{4 * mib, 32 * mib, 700},   // goal 32 MiB
		{5 * mib, 32 * mib, 500},   // 540 rounded down to a multiple of 50
		{12 * mib, 32 * mib, 150},  // 166 rounded down
		{15 * mib, 32 * mib, 100},  // 113 rounded down, never under 100
		{16 * mib, 32 * mib, 100},  // 2 × live reaches the floor: Go's default
		{200 * mib, 32 * mib, 100}, // a large live heap costs no more than the default
		{4 * mib, 0, 100},          // no floor
	} {
		if got := gcPercentFor(c.live, c.floor); got != c.want {
			t.Errorf("gcPercentFor(%d MiB, %d MiB) = %d, want %d", c.live/mib, c.floor/mib, got, c.want)
		}
	}
}

// TestTuneGC checks that the tuner raises GOGC for this test binary's small
// heap after a cycle, and that a GOGC from the environment turns it off.
func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))

	stop := tuneGC(func(string) string { return "100" }) // GOGC set: nothing happens
	runtime.GC()
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("with GOGC set, the GC percent became %d", p)
	}
	stop()

	stop = tuneGC(func(string) string { return "" })
	defer stop()
	if p := currentGCPercent(); p <= 100 {
		t.Errorf("after tuneGC, GC percent %d, want above 100 for a live heap far under %d MiB", p, gcHeapFloor>>20)
	}
	// After later cycles the tuner, called back by the runtime, sets it again.
	debug.SetGCPercent(100)
	for deadline := time.Now().Add(10 * time.Second); currentGCPercent() == 100; {
		if time.Now().After(deadline) {
			t.Fatal("the tuner did not run again after garbage collections")
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

func currentGCPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}
