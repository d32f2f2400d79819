package mail_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/mail"
)

// README "Mail relay outage": "meanwhile the relay is probed (connect, EHLO,
// AUTH, QUIT) every 5 s [MinBackoff], and when it answers every waiting
// message is sent at once"; with several replicas "each message keeps its
// own backoff (at most 10 min)". Prober's doc: "a Queue in an outage probes
// the relay every MinBackoff".
//
// Run only schedules the next pass from what deliverDue returns; a probe
// pass that fails and finds nothing due yet returns zero (deliverDue's
// `len(due) < batch` exit), which drops the probe schedule and also the
// message's own retry time (the failed delivery returned "the next probe",
// not its NextAttempt). The queue then sleeps PollInterval (30 s by
// default): no probe, no retry of the waiting message, however short its
// backoff. In production a reset mail waits up to 30 s after the relay's
// return instead of 5 s; with a long PollInterval it waits that long.
func TestQueueKeepsProbingDuringOutage(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprint("shared=", shared), func(t *testing.T) {
			store := openStore(t, "")
			relay := &flakyRelay{}
			const minBackoff, maxBackoff = 20 * time.Millisecond, 200 * time.Millisecond
			q := mail.NewQueue(store, relay, mail.QueueOptions{Shared: shared,
				MinBackoff: minBackoff, MaxBackoff: maxBackoff, PollInterval: time.Hour})
			enqueue(t, store, "alice@example.com")
			run(t, q)
			waitFor(t, "two failed attempts", func() bool { return relay.attempts.Load() >= 2 })
			time.Sleep(300 * time.Millisecond) // the outage goes on a little
			relay.up.Store(true)
			up := time.Now()
			// Probed every MinBackoff, the mail goes at once; even on its
			// own backoff it goes within MaxBackoff. Allow ten times that.
			deadline := up.Add(10 * maxBackoff)
			for relay.count() == 0 {
				if time.Now().After(deadline) {
					m := queued(t, store)
					t.Fatalf("relay back for %s (MinBackoff %s, MaxBackoff %s), mail not sent: %d attempts, due again since %s; the queue sleeps PollInterval (1h) instead of probing and retrying",
						time.Since(up).Round(time.Millisecond), minBackoff, maxBackoff, relay.attempts.Load(),
						time.Since(m[0].NextAttempt).Round(time.Millisecond))
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
