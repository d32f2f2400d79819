package mail_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/mail"
	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// claimCountingStore counts the ClaimMail calls that returned.
type claimCountingStore struct {
	mail.QueueStore
	claims atomic.Int32
}

func (c *claimCountingStore) ClaimMail(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]storage.Mail, error) {
	defer c.claims.Add(1)
	return c.QueueStore.ClaimMail(ctx, now, lease, limit)
}

// blockingRelay is a Sender and Prober that answers probes and holds every
// Send until release is closed: a delivery in progress.
type blockingRelay struct {
	started chan storage.Mail
	release chan struct{}
}

func (r *blockingRelay) Send(ctx context.Context, m storage.Mail) error {
	r.started <- m
	select {
	case <-r.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *blockingRelay) Probe(context.Context) error { return nil }

// README "More than one replica": "two replicas never send the same reset
// mail". Replica A's relay was down (A is in an outage); the relay comes
// back and replica B claims the message and is sending it, under its lease.
// A's next pass probes the relay, finds it back and "delivers every waiting
// message at once, due or not" by claiming up to now+GiveUpAfter+MaxBackoff:
// that also claims the message B holds a lease on, so A sends it a second
// time (for a reset job: a second token, which voids B's link).
func TestSharedQueueAfterOutageLeavesLeasedMailAlone(t *testing.T) {
	store := openStore(t, "")
	clock := webtest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	m := testMail()
	m.To, m.CreatedAt, m.NextAttempt = "victim@example.com", clock.Now(), clock.Now()
	if _, err := store.EnqueueMail(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	opts := mail.QueueOptions{Shared: true, Clock: clock.Now, MinBackoff: 5 * time.Second,
		MaxBackoff: 10 * time.Minute, PollInterval: time.Hour}

	// Replica A: its first attempt fails, it is in an outage.
	relayA := &flakyRelay{}
	storeA := &claimCountingStore{QueueStore: store}
	qA := mail.NewQueue(storeA, relayA, opts)
	run(t, qA)
	waitFor(t, "replica A's failed attempt", func() bool { return relayA.attempts.Load() == 1 })

	// The relay is back; the message is due again; replica B claims it
	// and is sending it.
	relayA.up.Store(true)
	clock.Advance(opts.MinBackoff)
	relayB := &blockingRelay{started: make(chan storage.Mail, 1), release: make(chan struct{})}
	qB := mail.NewQueue(store, relayB, opts)
	stopB := run(t, qB)
	select {
	case <-relayB.started:
	case <-time.After(10 * time.Second):
		t.Fatal("replica B did not start sending")
	}
	defer func() { close(relayB.release); stopB() }()

	// Replica A's next pass, a second later: the probe answers.
	clock.Advance(time.Second)
	claims := storeA.claims.Load()
	qA.Wake()
	waitFor(t, "replica A's pass", func() bool { return storeA.claims.Load() > claims })
	time.Sleep(100 * time.Millisecond) // a delivery A started would be counted by now
	if n := relayA.count(); n != 0 {
		t.Fatalf("replica A sent %s while replica B held its lease and was sending it: the same mail twice", m.To)
	}
}

// README "More than one replica": "A replica that dies mid-delivery leaves
// the message to another after the lease" (SendTimeout plus a minute). The
// claim of the pass after an outage computes the lease from now plus
// GiveUpAfter plus MaxBackoff, so the message is hidden for over a day: a
// replica that dies while sending it leaves a reset mail undelivered that
// long.
func TestSharedQueueAfterOutageLeaseIsSendTimeoutPlusAMinute(t *testing.T) {
	store := openStore(t, "")
	clock := webtest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	m := testMail()
	m.To, m.CreatedAt, m.NextAttempt = "victim@example.com", clock.Now(), clock.Now()
	id, err := store.EnqueueMail(t.Context(), m)
	if err != nil {
		t.Fatal(err)
	}
	const sendTimeout = 2 * time.Minute
	opts := mail.QueueOptions{Shared: true, Clock: clock.Now, MinBackoff: 5 * time.Second,
		MaxBackoff: 10 * time.Minute, PollInterval: time.Hour, SendTimeout: sendTimeout}

	// The relay is down at the first attempt (an outage), then back but slow.
	relay := &switchRelay{blocking: blockingRelay{started: make(chan storage.Mail, 1), release: make(chan struct{})}}
	q := mail.NewQueue(store, relay, opts)
	stop := run(t, q)
	waitFor(t, "the failed attempt", func() bool { return relay.failures.Load() == 1 })
	relay.up.Store(true)
	clock.Advance(opts.MinBackoff)
	q.Wake()
	select {
	case <-relay.blocking.started:
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery after the relay came back")
	}
	// The replica is mid-delivery: this is what another replica sees if it dies now.
	var leased time.Time
	for _, qm := range queuedAt(t, store, clock.Now()) {
		if qm.ID == id {
			leased = qm.NextAttempt
		}
	}
	close(relay.blocking.release)
	stop()
	if limit := clock.Now().Add(sendTimeout + time.Minute); leased.After(limit) {
		t.Fatalf("message leased until %s, %s from now; want at most the send timeout plus a minute (%s)",
			leased.Format(time.RFC3339), leased.Sub(clock.Now()), sendTimeout+time.Minute)
	}
}

// switchRelay fails sends until up is set, then behaves as blocking.
type switchRelay struct {
	up       atomic.Bool
	failures atomic.Int32
	blocking blockingRelay
}

func (r *switchRelay) Send(ctx context.Context, m storage.Mail) error {
	if !r.up.Load() {
		r.failures.Add(1)
		return context.DeadlineExceeded
	}
	return r.blocking.Send(ctx, m)
}

func (r *switchRelay) Probe(ctx context.Context) error {
	if !r.up.Load() {
		return context.DeadlineExceeded
	}
	return nil
}
