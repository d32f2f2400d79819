package mail_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/mail"
	"github.com/gatehouse-auth/gatehouse/authflows/mail/mailtest"
	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// flakyRelay is a Sender and Prober whose relay is down until up is set.
type flakyRelay struct {
	up        atomic.Bool
	mu        sync.Mutex
	delivered []string
	attempts  atomic.Int32
	probes    atomic.Int32
}

func (r *flakyRelay) Send(_ context.Context, m storage.Mail) error {
	r.attempts.Add(1)
	if !r.up.Load() {
		return errors.New("relay unavailable")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delivered = append(r.delivered, m.To)
	return nil
}

func (r *flakyRelay) Probe(context.Context) error {
	r.probes.Add(1)
	if !r.up.Load() {
		return errors.New("relay unavailable")
	}
	return nil
}

func (r *flakyRelay) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.delivered)
}

// After a long outage every waiting message goes out at
// the first probe after the relay's return (MinBackoff), not each after its
// own backoff (up to MaxBackoff); during the outage each is still tried on
// its own backoff.
func TestQueueFlushesPromptlyAfterOutage(t *testing.T) {
	store := openStore(t, "")
	counting := &countingStore{QueueStore: store}
	clock := webtest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	relay := &flakyRelay{}
	const minBackoff, maxBackoff = 5 * time.Second, 10 * time.Minute
	q := mail.NewQueue(counting, relay, mail.QueueOptions{
		Clock: clock.Now, MinBackoff: minBackoff, MaxBackoff: maxBackoff, PollInterval: time.Millisecond,
	})
	for _, to := range []string{"a@example.com", "b@example.com", "c@example.com", "d@example.com"} {
		m := testMail()
		m.To, m.CreatedAt, m.NextAttempt = to, clock.Now(), clock.Now()
		if _, err := store.EnqueueMail(t.Context(), m); err != nil {
			t.Fatal(err)
		}
	}
	run(t, q)
	onePass := func() {
		t.Helper()
		reads := counting.reads.Load()
		q.Wake()
		waitFor(t, "a pass of the queue", func() bool { return counting.reads.Load() >= reads+3 })
	}
	// A 40-minute outage, one pass every 10 s of queue time: every message
	// fails again and again and its backoff grows to MaxBackoff.
	for range 240 {
		clock.Advance(10 * time.Second)
		onePass()
	}
	for _, m := range queuedAt(t, store, clock.Now()) {
		if m.Attempts < 5 {
			t.Errorf("%s: %d attempts in 40 minutes of outage, want each tried at least every %s", m.To, m.Attempts, maxBackoff)
		}
	}
	// Just after a round of failures: every message waits its full backoff.
	var next time.Time
	for _, m := range queuedAt(t, store, clock.Now()) {
		if m.NextAttempt.After(next) {
			next = m.NextAttempt
		}
	}
	clock.Advance(next.Sub(clock.Now()) + time.Second)
	q.Wake()
	waitFor(t, "a round of failed attempts", func() bool {
		for _, m := range queuedAt(t, store, clock.Now()) {
			if !m.NextAttempt.After(clock.Now()) {
				return false
			}
		}
		return true
	})
	for _, m := range queuedAt(t, store, clock.Now()) {
		if wait := m.NextAttempt.Sub(clock.Now()); wait < 5*time.Minute {
			t.Fatalf("%s: next attempt in %s: the test does not show long backoffs", m.To, wait)
		}
	}

	relay.up.Store(true)
	clock.Advance(minBackoff) // the next probe
	onePass()
	waitFor(t, "every waiting message delivered", func() bool { return relay.count() == 4 })
	if q := queuedAt(t, store, clock.Now()); len(q) != 0 {
		t.Errorf("%d messages still queued", len(q))
	}
}

func queuedAt(t *testing.T, s storage.Store, now time.Time) []storage.Mail {
	t.Helper()
	due, err := s.DueMail(t.Context(), now.Add(1000*time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	return due
}

// The SMTP sender probes its relay without sending anything.
func TestSMTPProbe(t *testing.T) {
	srv := mailtest.NewServer(t, mailtest.Options{Username: "relay-user", Password: "relay-secret"})
	s := newSMTP(t, mail.SMTPConfig{Addr: srv.Addr, TLS: mail.TLSNone, Username: "relay-user", Password: "relay-secret"})
	var p mail.Prober = s
	if err := p.Probe(t.Context()); err != nil {
		t.Fatalf("probe of a running relay: %v", err)
	}
	srv.None(t, 100*time.Millisecond) // nothing was sent
	srv.Close()
	if err := p.Probe(t.Context()); err == nil {
		t.Fatal("probe of a closed relay succeeded")
	}
}
