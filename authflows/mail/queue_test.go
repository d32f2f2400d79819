package mail_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/mail"
	"github.com/gatehouse-auth/gatehouse/authflows/mail/mailtest"
	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
)

func openStore(t *testing.T, path string) *bolt.Store {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "gatehouse.db")
	}
	s, err := bolt.Open(path, bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func enqueue(t *testing.T, s storage.Store, to string) uint64 {
	t.Helper()
	m := testMail()
	m.To, m.CreatedAt = to, time.Now()
	id, err := s.EnqueueMail(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func queued(t *testing.T, s storage.Store) []storage.Mail {
	t.Helper()
	due, err := s.DueMail(context.Background(), time.Now().Add(1000*time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	return due
}

// senderFunc is a Sender made of a function.
type senderFunc func(ctx context.Context, m storage.Mail) error

func (f senderFunc) Send(ctx context.Context, m storage.Mail) error { return f(ctx, m) }

// lockedBuffer is the shared concurrency-safe log sink.
type lockedBuffer = webtest.LogBuffer

// run starts q and returns a function that stops it and waits for Run to return.
func run(t *testing.T, q *mail.Queue) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Error("Run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestQueueDeliversOverSMTPAndDeletes(t *testing.T) {
	store := openStore(t, "")
	srv := mailtest.NewServer(t, mailtest.Options{Username: "u", Password: "p"})
	sender := newSMTP(t, mail.SMTPConfig{Addr: srv.Addr, TLS: mail.TLSNone, Username: "u", Password: "p"})
	for i := range 3 {
		enqueue(t, store, fmt.Sprintf("user%d@example.com", i))
	}
	run(t, mail.NewQueue(store, sender, mail.QueueOptions{}))
	got := map[string]bool{}
	for range 3 {
		got[srv.Next(t, 5*time.Second).To[0]] = true
	}
	if len(got) != 3 {
		t.Fatalf("recipients %v", got)
	}
	waitFor(t, "the queue to empty", func() bool { return len(queued(t, store)) == 0 })
}

// SMTP down: the message waits in the store and goes out once the relay is up.
func TestQueueRetriesUntilRelayComesUp(t *testing.T) {
	store := openStore(t, "")
	addr := reservePort(t)
	sender := newSMTP(t, mail.SMTPConfig{Addr: addr, TLS: mail.TLSNone})
	logs := &lockedBuffer{}
	q := mail.NewQueue(store, sender, mail.QueueOptions{
		Logger:     slog.New(slog.NewTextHandler(logs, nil)),
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
	})
	enqueue(t, store, "alice@example.com")
	run(t, q)
	waitFor(t, "a failed attempt", func() bool {
		m := queued(t, store)
		return len(m) == 1 && m[0].Attempts >= 2
	})
	if !strings.Contains(logs.String(), "mail delivery failed") {
		t.Fatalf("no failure logged: %s", logs)
	}
	srv := mailtest.NewServer(t, mailtest.Options{Addr: addr})
	if got := srv.Next(t, 5*time.Second); got.To[0] != "alice@example.com" {
		t.Fatalf("delivered to %v", got.To)
	}
	waitFor(t, "the queue to empty", func() bool { return len(queued(t, store)) == 0 })
}

// Failed attempts are retried after 1, 2, 4 × MinBackoff, measured on the
// queue's clock: each failure stores the next attempt exactly that far
// ahead, and the message is not tried again before the clock gets there.
func TestQueueBacksOffExponentially(t *testing.T) {
	store := openStore(t, "")
	counting := &countingStore{QueueStore: store}
	clock := webtest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	var attempts atomic.Int32
	sender := senderFunc(func(ctx context.Context, m storage.Mail) error {
		if attempts.Add(1) < 4 {
			return errors.New("relay unavailable")
		}
		return nil
	})
	m := testMail()
	m.To, m.CreatedAt = "alice@example.com", clock.Now()
	if _, err := store.EnqueueMail(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	const minBackoff = time.Minute
	q := mail.NewQueue(counting, sender, mail.QueueOptions{
		Clock: clock.Now, MinBackoff: minBackoff, MaxBackoff: time.Hour, PollInterval: time.Millisecond,
	})
	run(t, q)
	// onePass waits until the queue has read the store three more times:
	// the second read began after the call, and the third one after the
	// deliveries of the second one's pass.
	onePass := func() {
		t.Helper()
		reads := counting.reads.Load()
		q.Wake()
		waitFor(t, "a pass of the queue", func() bool { return counting.reads.Load() >= reads+3 })
	}
	stored := func() storage.Mail {
		t.Helper()
		due, err := store.DueMail(t.Context(), clock.Now().Add(1000*time.Hour), 10)
		if err != nil || len(due) != 1 {
			t.Fatalf("queued: %+v, %v; want one message", due, err)
		}
		return due[0]
	}
	for i, factor := range []time.Duration{1, 2, 4} {
		waitFor(t, fmt.Sprintf("failure %d to be recorded", i+1), func() bool { return stored().Attempts == i+1 })
		if wait := stored().NextAttempt.Sub(clock.Now()); wait != factor*minBackoff {
			t.Fatalf("after failure %d: next attempt in %v, want %v", i+1, wait, factor*minBackoff)
		}
		clock.Advance(factor*minBackoff - time.Second)
		onePass()
		if n := attempts.Load(); n != int32(i+1) {
			t.Fatalf("retry %d came %v early", i+1, time.Second)
		}
		clock.Advance(time.Second)
		q.Wake()
	}
	waitFor(t, "delivery", func() bool {
		due, err := store.DueMail(t.Context(), clock.Now().Add(1000*time.Hour), 10)
		return err == nil && len(due) == 0
	})
	if n := attempts.Load(); n != 4 {
		t.Fatalf("%d attempts, want 4", n)
	}
}

func TestQueueGivesUpWithErrorLog(t *testing.T) {
	store := openStore(t, "")
	var sends atomic.Int32
	sender := senderFunc(func(ctx context.Context, m storage.Mail) error {
		sends.Add(1)
		return errors.New("relay unavailable")
	})
	logs := &lockedBuffer{}
	enqueue(t, store, "alice@example.com")
	// Backoffs 1, 2, 4, 4, 4, 4, 4 ms: the sum reaches 20ms on the 7th failure.
	run(t, mail.NewQueue(store, sender, mail.QueueOptions{
		Logger:     slog.New(slog.NewTextHandler(logs, nil)),
		MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond, GiveUpAfter: 20 * time.Millisecond,
	}))
	waitFor(t, "the message to be dropped", func() bool { return len(queued(t, store)) == 0 })
	if n := sends.Load(); n != 7 {
		t.Errorf("%d attempts before giving up, want 7", n)
	}
	if !strings.Contains(logs.String(), "level=ERROR msg=\"mail dropped\"") {
		t.Errorf("no error log for the dropped message:\n%s", logs)
	}
}

func TestQueueDropsPermanentFailureAtOnce(t *testing.T) {
	store := openStore(t, "")
	srv := mailtest.NewServer(t, mailtest.Options{RejectRcpt: []string{"gone@example.com"}})
	sender := newSMTP(t, mail.SMTPConfig{Addr: srv.Addr, TLS: mail.TLSNone})
	enqueue(t, store, "gone@example.com")
	enqueue(t, store, "alice@example.com")
	run(t, mail.NewQueue(store, sender, mail.QueueOptions{MinBackoff: time.Hour}))
	if got := srv.Next(t, 5*time.Second); got.To[0] != "alice@example.com" {
		t.Fatalf("delivered to %v", got.To)
	}
	waitFor(t, "the queue to empty", func() bool { return len(queued(t, store)) == 0 })
}

// Stopping the queue, even in the middle of a delivery, loses nothing: the
// message stays in the store and a new queue (after a restart) sends it.
func TestQueueStopKeepsMail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	store := openStore(t, path)
	started := make(chan struct{}, 1)
	hanging := senderFunc(func(ctx context.Context, m storage.Mail) error {
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	})
	enqueue(t, store, "alice@example.com")
	stop := run(t, mail.NewQueue(store, hanging, mail.QueueOptions{}))
	<-started
	stop()
	left := queued(t, store)
	if len(left) != 1 || left[0].Attempts != 0 {
		t.Fatalf("after stop: %+v, want the message queued with no failed attempt", left)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	store = openStore(t, path)
	srv := mailtest.NewServer(t, mailtest.Options{})
	sender := newSMTP(t, mail.SMTPConfig{Addr: srv.Addr, TLS: mail.TLSNone})
	run(t, mail.NewQueue(store, sender, mail.QueueOptions{}))
	if got := srv.Next(t, 5*time.Second); got.To[0] != "alice@example.com" {
		t.Fatalf("delivered to %v", got.To)
	}
}

// countingStore counts finished DueMail reads.
type countingStore struct {
	mail.QueueStore
	reads atomic.Int32
}

func (c *countingStore) DueMail(ctx context.Context, now time.Time, limit int) ([]storage.Mail, error) {
	defer c.reads.Add(1)
	return c.QueueStore.DueMail(ctx, now, limit)
}

func TestQueueWakeStartsAtOnce(t *testing.T) {
	store := openStore(t, "")
	counting := &countingStore{QueueStore: store}
	srv := mailtest.NewServer(t, mailtest.Options{})
	sender := newSMTP(t, mail.SMTPConfig{Addr: srv.Addr, TLS: mail.TLSNone})
	q := mail.NewQueue(counting, sender, mail.QueueOptions{PollInterval: time.Hour})
	run(t, q)
	waitFor(t, "the first pass", func() bool { return counting.reads.Load() >= 1 })
	enqueue(t, store, "alice@example.com")
	q.Wake()
	if got := srv.Next(t, 5*time.Second); got.To[0] != "alice@example.com" {
		t.Fatalf("delivered to %v", got.To)
	}
}

func TestQueueRunsOnce(t *testing.T) {
	counting := &countingStore{QueueStore: openStore(t, "")}
	q := mail.NewQueue(counting, senderFunc(func(context.Context, storage.Mail) error { return nil }), mail.QueueOptions{})
	run(t, q)
	waitFor(t, "the first pass", func() bool { return counting.reads.Load() >= 1 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := q.Run(ctx); err == nil {
		t.Fatal("second concurrent Run accepted")
	}
}

// failingDeleteStore cannot delete (a full disk: reads work, writes fail)
// until healed; it counts the deletion attempts.
type failingDeleteStore struct {
	mail.QueueStore
	healed  atomic.Bool
	deletes atomic.Int32
}

func (s *failingDeleteStore) DeleteMail(ctx context.Context, id uint64) error {
	s.deletes.Add(1)
	if !s.healed.Load() {
		return errors.New("no space left on device")
	}
	return s.QueueStore.DeleteMail(ctx, id)
}

// A message delivered (or dropped as undeliverable) whose deletion fails is
// not sent again on every pass while the store cannot write: only the
// deletion is retried, and the recipient gets one mail, not one per pass.
func TestQueueDoesNotResendWhenDeleteFails(t *testing.T) {
	for name, result := range map[string]error{"delivered": nil, "dropped": fmt.Errorf("rcpt to: %w", mail.ErrPermanent)} {
		t.Run(name, func(t *testing.T) {
			store := openStore(t, "")
			failing := &failingDeleteStore{QueueStore: store}
			var sends atomic.Int32
			sender := senderFunc(func(context.Context, storage.Mail) error { sends.Add(1); return result })
			enqueue(t, store, "alice@example.com")
			run(t, mail.NewQueue(failing, sender, mail.QueueOptions{
				MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, PollInterval: time.Millisecond,
			}))
			waitFor(t, "three failed deletions", func() bool { return failing.deletes.Load() >= 3 })
			failing.healed.Store(true)
			waitFor(t, "the queue to empty", func() bool { return len(queued(t, store)) == 0 })
			if n := sends.Load(); n != 1 {
				t.Errorf("%d sends, want 1", n)
			}
		})
	}
}

// resetJob is a queued password reset job: a user id, no body.
func resetJob(to string) storage.Mail {
	return storage.Mail{Kind: storage.MailKindPasswordReset, UserID: "0123456789abcdef0123456789abcdef", To: to, CreatedAt: time.Now()}
}

// A job goes through Prepare at every attempt and the prepared message is
// sent; the queued record stays the job, without what Prepare made (a
// failed attempt writes no secret). Ready messages are sent as stored.
func TestQueuePreparesJobsAtEachAttempt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	store := openStore(t, path)
	clock := webtest.NewClock(time.Now())
	var (
		mu       sync.Mutex
		prepared []storage.Mail
		sent     []storage.Mail
	)
	prepare := func(ctx context.Context, job storage.Mail) (storage.Mail, error) {
		mu.Lock()
		defer mu.Unlock()
		prepared = append(prepared, job)
		return storage.Mail{ID: job.ID, To: job.To, Subject: "Reset", Text: fmt.Sprintf("secret-%d", len(prepared))}, nil
	}
	sender := senderFunc(func(ctx context.Context, m storage.Mail) error {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, m)
		if m.Text == "secret-1" {
			return errors.New("relay unavailable")
		}
		return nil
	})
	ready := testMail()
	ready.To = "bob@example.com"
	readyID, err := store.EnqueueMail(t.Context(), ready)
	if err != nil {
		t.Fatal(err)
	}
	ready.ID = readyID
	job := resetJob("alice@example.com")
	if job.ID, err = store.EnqueueMail(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	q := mail.NewQueue(store, sender, mail.QueueOptions{
		Clock: clock.Now, MinBackoff: time.Minute, PollInterval: time.Millisecond, Prepare: prepare,
	})
	run(t, q)

	waitFor(t, "the failed attempt to be recorded", func() bool {
		m := queued(t, store)
		return len(m) == 1 && m[0].Attempts == 1
	})
	left := queued(t, store)[0]
	job.Attempts, job.NextAttempt = 1, clock.Now().Add(time.Minute)
	if !left.NextAttempt.Equal(job.NextAttempt) || !left.CreatedAt.Equal(job.CreatedAt) {
		t.Fatalf("after a failed attempt: %+v, want %+v", left, job)
	}
	left.NextAttempt, left.CreatedAt = job.NextAttempt, job.CreatedAt
	if left != job {
		t.Fatalf("after a failed attempt: %+v, want the job unchanged but for the attempt", left)
	}
	clock.Advance(time.Minute)
	q.Wake()
	waitFor(t, "the queue to empty", func() bool { return len(queued(t, store)) == 0 })

	mu.Lock()
	defer mu.Unlock()
	if len(prepared) != 2 || prepared[0].ID != job.ID || prepared[1].ID != job.ID || prepared[1].Attempts != 1 {
		t.Fatalf("Prepare saw %+v, want the job twice (and never the ready message)", prepared)
	}
	if len(sent) != 3 || sent[0] != ready || sent[1].Text != "secret-1" || sent[2].Text != "secret-2" {
		t.Fatalf("sent %+v, want the ready message as stored, then the job prepared anew for each attempt", sent)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(file, []byte("secret-")) {
		t.Fatal("a prepared message reached the database file")
	}
}

// A job Prepare cannot make into a message: its user is gone
// (storage.ErrNotFound) or the failure is permanent, or no Prepare is set:
// dropped at once with an error log. Another error is a failed attempt.
func TestQueueJobsThatCannotBePrepared(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(context.Context, storage.Mail) (storage.Mail, error)
		dropped bool
	}{
		{"user gone", func(context.Context, storage.Mail) (storage.Mail, error) {
			return storage.Mail{}, fmt.Errorf("look up user: %w", storage.ErrNotFound)
		}, true},
		{"permanent", func(context.Context, storage.Mail) (storage.Mail, error) {
			return storage.Mail{}, fmt.Errorf("no template: %w", mail.ErrPermanent)
		}, true},
		{"no Prepare", nil, true},
		{"store busy", func(context.Context, storage.Mail) (storage.Mail, error) {
			return storage.Mail{}, errors.New("database busy")
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := openStore(t, "")
			var sends atomic.Int32
			sender := senderFunc(func(ctx context.Context, m storage.Mail) error {
				if m.Kind != storage.MailKindMessage {
					t.Errorf("a job was sent unprepared: %+v", m)
				}
				sends.Add(1)
				return nil
			})
			enqueue(t, store, "bob@example.com")
			if _, err := store.EnqueueMail(t.Context(), resetJob("alice@example.com")); err != nil {
				t.Fatal(err)
			}
			logs := &lockedBuffer{}
			run(t, mail.NewQueue(store, sender, mail.QueueOptions{
				Logger:     slog.New(slog.NewTextHandler(logs, nil)),
				MinBackoff: time.Hour, Prepare: tc.prepare,
			}))
			waitFor(t, "the ready message", func() bool { return sends.Load() == 1 })
			if tc.dropped {
				waitFor(t, "the job to be dropped", func() bool { return len(queued(t, store)) == 0 })
				if !strings.Contains(logs.String(), `level=ERROR msg="mail dropped"`) {
					t.Errorf("no error log for the dropped job:\n%s", logs)
				}
				return
			}
			waitFor(t, "a failed attempt", func() bool {
				m := queued(t, store)
				return len(m) == 1 && m[0].Attempts == 1
			})
		})
	}
}
