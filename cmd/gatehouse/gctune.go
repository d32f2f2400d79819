package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// gcHeapFloor is the smallest heap goal the garbage collector is given. The
// proxy's live heap is a few MiB, so at GOGC=100 every ~4 MiB of per-request
// garbage (a few hundred bytes per request) starts a cycle: at 10,000 req/s
// about 30 cycles per 10,000 requests, about a seventh of the process's CPU
// (see README, "Measured"). With a 32 MiB floor the heap goal stays 32 MiB
// until the live heap passes 16 MiB; above that GOGC is 100 again, so a
// large live heap (a million cached assertions, argon2id's 19 MiB buffers)
// costs no more memory than Go's default.
const gcHeapFloor = 32 << 20

// gcTuner keeps the heap goal at max(2 × live heap, floor) by setting the
// GC percentage after every cycle. It runs only when GOGC is not set: an
// operator's GOGC wins. GOMEMLIMIT still applies on top (the runtime
// collects harder as the heap nears it), so a container limit holds.
type gcTuner struct {
	floor uint64
	live  []metrics.Sample
	done  atomic.Bool
}

// tuneGC starts the tuner unless getenv("GOGC") is set. The process never
// stops it; stop (for tests) ends the tuning and restores GOGC=100.
func tuneGC(getenv func(string) string) (stop func()) {
	if getenv("GOGC") != "" {
		return func() {}
	}
	t := &gcTuner{floor: gcHeapFloor, live: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.tune()
	t.arm()
	return func() {
		t.done.Store(true)
		debug.SetGCPercent(100)
	}
}

// arm makes the runtime call tune after the next cycle: a cleanup on an
// object nothing references runs once a cycle has found it unreachable.
func (t *gcTuner) arm() {
	runtime.AddCleanup(new([64]byte), func(t *gcTuner) {
		if !t.done.Load() {
			t.tune()
			t.arm()
		}
	}, t)
}

func (t *gcTuner) tune() {
	metrics.Read(t.live)
	var live uint64
	if t.live[0].Value.Kind() == metrics.KindUint64 {
		live = t.live[0].Value.Uint64()
	}
	debug.SetGCPercent(gcPercentFor(live, t.floor))
}

// gcPercentFor is the GOGC that makes the heap goal, live × (1 + GOGC/100),
// equal to floor, and 100 once 2 × live is above floor, rounded down to a
// multiple of 50 (the goal stays at or under the floor). A live heap under
// 1 MiB counts as 1 MiB.
func gcPercentFor(live, floor uint64) int {
	live = max(live, 1<<20)
	if 2*live >= floor {
		return 100
	}
	p := int((floor - live) * 100 / live)
	return max(100, p/50*50)
}
