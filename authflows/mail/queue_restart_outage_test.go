package mail_test

import (
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/mail"
	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
)

// README "Mail relay outage": when the relay answers again "every waiting
// message is sent at once", not each on its own backoff. A process that
// stops or crashes during an outage leaves its mail in the store, each
// message rescheduled on its backoff; the queue of the next process must
// know that mail is waiting and probe the relay, rather than start as if
// all were well and send nothing until each message's retry time. The
// queue clock stands still here: only a probe can make the mail go.
func TestQueueAfterRestartSendsWaitingMailWhenRelayAnswers(t *testing.T) {
	for _, tc := range []struct {
		name string
		// relayBackFirst: the relay answers before the new queue starts;
		// otherwise a moment after the new queue has found it down.
		relayBackFirst bool
	}{
		{"relay back before the restart", true},
		{"relay back after the restart", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := openStore(t, "")
			clock := webtest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
			relay := &flakyRelay{}
			opts := mail.QueueOptions{Clock: clock.Now, MinBackoff: 5 * time.Second, MaxBackoff: 10 * time.Minute,
				PollInterval: time.Millisecond}
			recipients := []string{"a@example.com", "b@example.com", "c@example.com"}
			for _, to := range recipients {
				m := testMail()
				m.To, m.CreatedAt, m.NextAttempt = to, clock.Now(), clock.Now()
				if _, err := store.EnqueueMail(t.Context(), m); err != nil {
					t.Fatal(err)
				}
			}
			// The first process: the relay is down, every message fails once
			// and waits for its retry; then the process is gone.
			stop := run(t, mail.NewQueue(store, relay, opts))
			waitFor(t, "a failed attempt at every message", func() bool {
				for _, m := range queuedAt(t, store, clock.Now()) {
					if m.Attempts == 0 {
						return false
					}
				}
				return true
			})
			stop()
			for _, m := range queuedAt(t, store, clock.Now()) {
				if !m.NextAttempt.After(clock.Now()) {
					t.Fatalf("%s is due now: the test needs mail waiting on its backoff", m.To)
				}
			}

			if tc.relayBackFirst {
				relay.up.Store(true)
			}
			probes := relay.probes.Load()
			run(t, mail.NewQueue(store, relay, opts))
			if !tc.relayBackFirst {
				waitFor(t, "the restarted queue probing the relay", func() bool { return relay.probes.Load() > probes })
				relay.up.Store(true)
			}
			waitFor(t, "the waiting mail sent once the relay answers", func() bool { return relay.count() == len(recipients) })
			if q := queuedAt(t, store, clock.Now()); len(q) != 0 {
				t.Errorf("%d messages still queued", len(q))
			}
		})
	}
}
