package policy

import (
	"testing"
	"time"
)

// The contract's bound: an emails-file change applies within 5 s of the
// write. Run looks every RefreshInterval and a look that sees a change
// applies it (a write still under way is read again at the next look), so
// two intervals must fit in 5 s with room for the reads. TestPolicyEndToEnd
// (cmd/gatehouse) shows the watcher is wired; this keeps its period honest.
func TestRefreshIntervalWithinContract(t *testing.T) {
	if 2*RefreshInterval > 4*time.Second {
		t.Fatalf("RefreshInterval %v: two looks no longer fit the contract's 5 s", RefreshInterval)
	}
}
