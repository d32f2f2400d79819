package mail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// QueueStore is what the Queue needs of the store: the mail queue methods
// of storage.Store.
type QueueStore interface {
	DueMail(ctx context.Context, now time.Time, limit int) ([]storage.Mail, error)
	ClaimMail(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]storage.Mail, error)
	DeleteMail(ctx context.Context, id uint64) error
	RescheduleMail(ctx context.Context, id uint64, next time.Time) error
}

// QueueOptions tune a Queue; the zero value gives the defaults.
type QueueOptions struct {
	Logger *slog.Logger     // default: discard
	Clock  func() time.Time // default time.Now; compared with Mail.NextAttempt
	// MinBackoff is the wait after a first failed attempt; it doubles with
	// every further failure up to MaxBackoff. Defaults 5s and 10m.
	MinBackoff, MaxBackoff time.Duration
	// GiveUpAfter: a message whose failed attempts have been retried for this
	// long in total (the sum of its backoffs) is dropped with an error log.
	// Default 24h.
	GiveUpAfter time.Duration
	// PollInterval is how often the store is read without a Wake, which
	// catches mail queued by another process and bounds how late a retry
	// can be. Default 30s.
	PollInterval time.Duration
	// SendTimeout bounds one delivery attempt. Default 2m.
	SendTimeout time.Duration
	// BatchSize is how many due messages are read at once. Default 20.
	BatchSize int
	// Shared: several replicas run a Queue on one store. Each message is
	// then claimed, one at a time, with a lease of SendTimeout plus a
	// minute (storage ClaimMail), so that two replicas never send the same
	// mail (nor void each other's reset tokens); a replica that dies
	// mid-delivery leaves the message to another after the lease.
	Shared bool
	// Prepare turns a queued job (a Mail whose Kind is not
	// storage.MailKindMessage) into the message to send, at every delivery
	// attempt: a secret the message carries, such as a password reset
	// token, is made there and never written to the queue. The message
	// returned is sent as it is; the queued job stays unchanged. An error
	// wrapping ErrPermanent or storage.ErrNotFound (the job's user is gone)
	// drops the job at once; another error counts as a failed attempt.
	// Ready messages are sent without it. Nil: jobs are dropped as
	// undeliverable.
	Prepare func(ctx context.Context, job storage.Mail) (storage.Mail, error)
}

// Queue delivers the mail queued in the store: Run reads due messages, hands
// each to the Sender (a job first through QueueOptions.Prepare), deletes it
// when delivered and reschedules it with exponential backoff when not. A
// message stays in the store until it is delivered or given up, so stopping
// the Queue (or the process) loses nothing.
type Queue struct {
	store   QueueStore
	sender  Sender
	opts    QueueOptions
	log     *slog.Logger
	wake    chan struct{}
	running atomic.Bool
	// finished holds the ids of messages delivered or dropped whose deletion
	// from the store failed: only the deletion is tried again, so a store
	// that reads but cannot write (a full disk) does not make the queue send
	// the message again on every pass. Used by Run's goroutine only.
	finished map[uint64]bool
	// outage is set by a transient delivery failure and cleared by a
	// delivery or a successful probe. Used by Run's goroutine only.
	outage bool
	// retries holds when each message this queue rescheduled is due again,
	// so that Run wakes for it rather than after PollInterval; an entry
	// goes once its time has come (the pass then tries the message, and a
	// new failure puts it back). Used by Run's goroutine only.
	retries map[uint64]time.Time
}

// Prober is a Sender that can check its relay without sending (SMTP). With
// one, a Queue in an outage probes the relay every MinBackoff, and once it
// answers delivers every waiting message at once, whatever each one's own
// backoff: mail flows again within seconds of the relay's return, not up to
// MaxBackoff later. Each message is still tried at least every MaxBackoff.
type Prober interface {
	Probe(ctx context.Context) error
}

// NewQueue returns a queue delivering the store's mail through sender.
func NewQueue(store QueueStore, sender Sender, opts QueueOptions) *Queue {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 5 * time.Second
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(10*time.Minute, opts.MinBackoff)
	}
	if opts.GiveUpAfter <= 0 {
		opts.GiveUpAfter = 24 * time.Hour
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 30 * time.Second
	}
	if opts.SendTimeout <= 0 {
		opts.SendTimeout = 2 * time.Minute
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 20
	}
	return &Queue{store: store, sender: sender, opts: opts, log: opts.Logger, wake: make(chan struct{}, 1), finished: map[uint64]bool{}, retries: map[uint64]time.Time{}}
}

// Wake makes a running queue read the store at once (new mail was queued).
// It never blocks; wakes while a pass is running fold into one more pass.
func (q *Queue) Wake() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// errAlreadyRunning: Run was called while another Run of the queue is active.
var errAlreadyRunning = errors.New("mail: queue is already running")

// Run delivers mail until ctx is cancelled, then returns nil. It starts with
// a pass over the due mail, so mail left by a previous run goes out at once;
// mail that run left waiting on its backoff (the relay was down) goes out as
// soon as a probe finds the relay answering (see Prober).
// A delivery interrupted by the cancellation stays queued. One Run per
// Queue at a time; cancel it (and wait for it to return) before closing the
// store.
func (q *Queue) Run(ctx context.Context) error {
	if !q.running.CompareAndSwap(false, true) {
		return errAlreadyRunning
	}
	defer q.running.Store(false)

	if !q.outage {
		q.outage = q.leftWaiting(ctx)
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-q.wake:
		case <-timer.C:
		}
		next := q.deliverDue(ctx)
		timer.Reset(q.nextWait(next))
	}
}

// nextWait is how long Run sleeps after a pass that said next (zero: no
// opinion): at most PollInterval; until the earliest retry of a message
// this queue rescheduled; and, in an outage with a relay it can probe,
// MinBackoff, the probe's cadence. Retries whose time has come are
// forgotten: the pass just run tried them.
func (q *Queue) nextWait(next time.Time) time.Duration {
	now := q.opts.Clock()
	wait := q.opts.PollInterval
	if !next.IsZero() {
		wait = min(wait, max(next.Sub(now), 0))
	}
	for id, at := range q.retries {
		if !at.After(now) {
			delete(q.retries, id)
			continue
		}
		wait = min(wait, at.Sub(now))
	}
	if _, probes := q.sender.(Prober); probes && q.outage {
		wait = min(wait, q.opts.MinBackoff)
	}
	return wait
}

// deliverDue sends every due message, batch by batch, and returns when the
// next pass should run at the latest (zero: nothing known). A transient
// failure ends the pass: the relay is likely down, and the remaining mail is
// tried again after MinBackoff rather than each waiting for its own timeout.
func (q *Queue) deliverDue(ctx context.Context) time.Time {
	// In an outage the relay is probed first: when it answers again, every
	// waiting message goes now, due or not; when it does not, due messages
	// are still tried on their own backoff (at least every MaxBackoff).
	all := q.outage && q.relayBack(ctx)
	for {
		now := q.opts.Clock()
		upTo := now
		// Not in a Shared queue: there a message another replica is sending
		// is one whose NextAttempt is its lease, and claiming beyond now
		// would take it from that replica (sent twice, each link voiding the
		// other) and lease it for as long as the look ahead. Shared mail
		// goes on its own backoff, at most MaxBackoff away.
		if all && !q.opts.Shared {
			upTo = now.Add(q.opts.GiveUpAfter + q.opts.MaxBackoff) // beyond any NextAttempt
		}
		due, batch, err := q.due(ctx, upTo)
		if err != nil {
			if ctx.Err() == nil {
				q.log.Error("mail queue: read due mail", "err", err)
			}
			return now.Add(q.opts.MinBackoff)
		}
		for i, m := range due {
			if ctx.Err() != nil {
				return time.Time{}
			}
			if retry, ok := q.deliver(ctx, m); !ok {
				if _, probes := q.sender.(Prober); probes && q.outage {
					return q.opts.Clock().Add(q.opts.MinBackoff) // the next probe
				}
				if i+1 < len(due) || len(due) == batch {
					return q.opts.Clock().Add(q.opts.MinBackoff) // others are waiting
				}
				return retry
			}
		}
		if len(due) < batch {
			return time.Time{}
		}
	}
}

// leftWaiting reports whether the store holds mail that has failed before
// and waits for its retry: an earlier run (one that stopped or crashed in
// an outage) left it, so this one starts in the outage and, with a sender
// that can probe, sends that mail as soon as the relay answers rather than
// on each message's own backoff. Mail leased by another replica has not
// failed (Attempts 0) and does not count. A failed read says no; the first
// pass reads again and logs.
func (q *Queue) leftWaiting(ctx context.Context) bool {
	if _, probes := q.sender.(Prober); !probes {
		return false
	}
	now := q.opts.Clock()
	queued, err := q.store.DueMail(ctx, now.Add(q.opts.GiveUpAfter+q.opts.MaxBackoff), q.opts.BatchSize)
	if err != nil {
		return false
	}
	for _, m := range queued {
		if m.Attempts > 0 && m.NextAttempt.After(now) {
			return true
		}
	}
	return false
}

// relayBack probes the relay during an outage and reports whether it
// answers again (the outage is then over). A sender that cannot probe never
// ends the outage this way: its mail waits for each message's own backoff.
func (q *Queue) relayBack(ctx context.Context) bool {
	p, ok := q.sender.(Prober)
	if !ok {
		q.outage = false
		return false
	}
	probeCtx, cancel := context.WithTimeout(ctx, q.opts.SendTimeout)
	defer cancel()
	if err := p.Probe(probeCtx); err != nil {
		q.log.Debug("mail relay still unavailable", "err", err)
		return false
	}
	q.log.Info("mail relay answers again: delivering the waiting mail")
	q.outage = false
	return true
}

// due reads the next batch of due mail and says how large a batch is; a
// Shared queue claims one message at a time.
func (q *Queue) due(ctx context.Context, now time.Time) ([]storage.Mail, int, error) {
	if q.opts.Shared {
		due, err := q.store.ClaimMail(ctx, now, q.opts.SendTimeout+time.Minute, 1)
		return due, 1, err
	}
	due, err := q.store.DueMail(ctx, now, q.opts.BatchSize)
	return due, q.opts.BatchSize, err
}

// deliver makes one attempt at m. It reports false when the pass should
// stop, with the time m is due again (zero when unknown).
func (q *Queue) deliver(ctx context.Context, m storage.Mail) (time.Time, bool) {
	if q.finished[m.ID] {
		return q.forget(ctx, m.ID)
	}
	sendCtx, cancel := context.WithTimeout(ctx, q.opts.SendTimeout)
	err := q.send(sendCtx, m)
	cancel()
	now := q.opts.Clock()
	if err == nil || errors.Is(err, ErrPermanent) {
		q.outage = false // the relay answered
	}
	switch {
	case err == nil:
		q.log.Info("mail delivered", "mail_id", m.ID, "to", m.To, "attempts", m.Attempts+1)
		q.finished[m.ID] = true
		return q.forget(ctx, m.ID)
	case ctx.Err() != nil:
		return time.Time{}, false // stopping: not a failed attempt
	case errors.Is(err, ErrPermanent) || q.exhausted(m.Attempts):
		q.log.Error("mail dropped", "mail_id", m.ID, "to", m.To, "attempts", m.Attempts+1, "err", err)
		q.finished[m.ID] = true
		return q.forget(ctx, m.ID)
	}
	q.outage = true
	wait := q.backoff(m.Attempts)
	next := now.Add(wait)
	q.log.Warn("mail delivery failed", "mail_id", m.ID, "to", m.To, "attempts", m.Attempts+1, "retry_in", wait.String(), "err", err)
	if err := q.store.RescheduleMail(ctx, m.ID, next); err != nil && !errors.Is(err, storage.ErrNotFound) {
		q.log.Error("mail queue: reschedule mail", "mail_id", m.ID, "err", err)
	}
	q.retries[m.ID] = next
	return next, false
}

// send hands m to the sender, a job once Prepare has made it a message.
// Each attempt prepares the job anew: after a failed attempt the next one
// carries a fresh reset token, which voids the one made for the failure.
func (q *Queue) send(ctx context.Context, m storage.Mail) error {
	if m.Kind == storage.MailKindMessage {
		return q.sender.Send(ctx, m)
	}
	if q.opts.Prepare == nil {
		return fmt.Errorf("mail of kind %q: no Prepare configured: %w", m.Kind, ErrPermanent)
	}
	msg, err := q.opts.Prepare(ctx, m)
	if errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("prepare %s mail: %w (%w)", m.Kind, ErrPermanent, err)
	}
	if err != nil {
		return fmt.Errorf("prepare %s mail: %w", m.Kind, err)
	}
	return q.sender.Send(ctx, msg)
}

// forget deletes a delivered or dropped message from the store. When that
// fails the pass stops (the store is likely failing) and the deletion alone
// is tried again on the next one; a restart before that sends the message
// again: twice, never not at all.
func (q *Queue) forget(ctx context.Context, id uint64) (time.Time, bool) {
	if err := q.store.DeleteMail(ctx, id); err != nil && !errors.Is(err, storage.ErrNotFound) {
		if ctx.Err() == nil {
			q.log.Error("mail queue: delete finished mail", "mail_id", id, "err", err)
		}
		return q.opts.Clock().Add(q.opts.MinBackoff), false
	}
	delete(q.finished, id)
	delete(q.retries, id)
	return time.Time{}, true
}

// backoff is the wait after the failure of attempt number attempts (0-based):
// MinBackoff doubled per earlier failure, at most MaxBackoff.
func (q *Queue) backoff(attempts int) time.Duration {
	d := q.opts.MinBackoff
	for range attempts {
		if d >= q.opts.MaxBackoff/2 {
			return q.opts.MaxBackoff
		}
		d *= 2
	}
	return min(d, q.opts.MaxBackoff)
}

// exhausted reports whether a message that has now failed attempts+1 times
// has been retried for GiveUpAfter in total. It counts backoffs rather than
// comparing CreatedAt with the clock, so a clock jump cannot drop mail.
func (q *Queue) exhausted(attempts int) bool {
	var total time.Duration
	for i := range attempts + 1 {
		total += q.backoff(i)
		if total >= q.opts.GiveUpAfter {
			return true
		}
	}
	return false
}
