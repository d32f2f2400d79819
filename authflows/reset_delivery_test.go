package authflows

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// The reset token is minted when its mail is delivered (Handler.PrepareMail),
// not when it is requested: the queue holds a job that names the user and
// no secret, so a copy of the database file never yields a live reset link.

// dbFile is the env's bbolt file as it is on disk now. bbolt writes every
// commit to the file at once (pwrite, even with NoSync), freed pages included.
func (e *testEnv) dbFile(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(e.DBPath)
	if err != nil {
		t.Fatalf("read %s: %v", e.DBPath, err)
	}
	if !bytes.Contains(b, []byte("alice@example.com")) {
		t.Fatal("the database file lacks the user's address: the check reads the wrong bytes")
	}
	return b
}

// queuedJobs returns every queued mail, due or not.
func (e *testEnv) queuedJobs(t *testing.T) []storage.Mail {
	t.Helper()
	due, err := e.Store.DueMail(t.Context(), e.Clock.Now().AddDate(10, 0, 0), 100)
	if err != nil {
		t.Fatalf("DueMail: %v", err)
	}
	return due
}

// writeRecorder wraps the flows' and the queue's store and records every
// value handed to a store method that writes mail or reset tokens, so a
// test can tell that a secret never reached the store, even one written and
// deleted again (bbolt soon reuses a small file's freed pages, so the file
// alone would not show it).
type writeRecorder struct {
	storage.Store
	mu     sync.Mutex
	writes strings.Builder
}

func (s *writeRecorder) record(args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(&s.writes, "%+v\n", args)
}

// Written is everything recorded so far.
func (s *writeRecorder) Written() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes.String()
}

func (s *writeRecorder) EnqueueMail(ctx context.Context, m storage.Mail) (uint64, error) {
	s.record(m)
	return s.Store.EnqueueMail(ctx, m)
}

func (s *writeRecorder) QueueResetMail(ctx context.Context, userID string, now time.Time) error {
	s.record(userID, now)
	return s.Store.QueueResetMail(ctx, userID, now)
}

func (s *writeRecorder) IssueResetToken(ctx context.Context, t storage.ResetToken) error {
	s.record(t)
	return s.Store.IssueResetToken(ctx, t)
}

func (s *writeRecorder) CompleteReset(ctx context.Context, tokenHash storage.Hash, now time.Time,
	passwordHash string, notice storage.Mail) (storage.User, int, error) {
	s.record(tokenHash, now, notice)
	return s.Store.CompleteReset(ctx, tokenHash, now, passwordHash, notice)
}

// RT1: neither while the mail waits in the queue nor after the whole cycle
// (forgot, delivery, reset) does the database file hold the token, in any
// page, freed ones included; it holds the token's SHA-256 while the token is
// valid. Nor was the token or a link ever handed to the store.
func TestResetTokenNeverInDatabaseFile(t *testing.T) {
	recorder := &writeRecorder{}
	e := newMailEnv(t, mailEnvConfig{relayDown: true, options: []func(*Config){func(c *Config) {
		recorder.Store = c.Store.(storage.Store)
		c.Store = recorder
	}}})
	e.CreateUser(t, "alice@example.com", oldPassword)
	e.forgot(t, "alice@example.com")
	// Every failed attempt minted a token and rendered a link: none of it
	// may have reached the file.
	waitUntil(t, "two failed delivery attempts", func() bool {
		q := e.queuedJobs(t)
		return len(q) == 1 && q[0].Attempts >= 2
	})
	job := e.queuedJobs(t)[0]
	if job.Kind != storage.MailKindPasswordReset || job.Subject != "" || job.Text != "" || job.HTML != "" {
		t.Fatalf("queued reset mail %+v, want a job without a body", job)
	}
	for _, s := range []string{"token=", "/auth/reset"} {
		if bytes.Contains(e.dbFile(t), []byte(s)) {
			t.Fatalf("before delivery the database file contains %q", s)
		}
	}

	e.startRelay(t)
	_, token := resetLink(t, e.nextMail(t))
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		t.Fatal(err)
	}
	hash := storage.HashSecret(token)
	if file := e.dbFile(t); !bytes.Contains(file, hash[:]) {
		t.Fatal("the token's hash is not in the database file: the check reads the wrong bytes")
	}
	if resp := e.postReset(token, freshPassword); resp.StatusCode != http.StatusOK {
		t.Fatalf("reset: %d %s", resp.StatusCode, e.Body(t, resp))
	}
	e.nextMail(t) // the notice
	e.noMail(t)
	file := e.dbFile(t)
	for name, b := range map[string][]byte{"token": []byte(token), "raw token bytes": raw, "link": []byte("token=")} {
		if bytes.Contains(file, b) {
			t.Errorf("after the reset the database file contains the %s", name)
		}
	}
	written := recorder.Written()
	if !strings.Contains(written, job.UserID) {
		t.Fatalf("the recorder saw no reset request: %s", written)
	}
	for _, s := range []string{token, "token="} {
		if strings.Contains(written, s) {
			t.Errorf("%q was handed to the store:\n%s", s, written)
		}
	}
}

// RT2 with SMTP down: the job waits in the queue longer than a token lives,
// and the mail that finally goes out carries a token valid for the whole
// --reset-token-ttl from its delivery.
func TestResetTokenLifetimeCountsFromDelivery(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{relayDown: true})
	e.CreateUser(t, "alice@example.com", oldPassword)
	e.forgot(t, "alice@example.com")
	waitUntil(t, "a failed delivery attempt", func() bool {
		q := e.queuedJobs(t)
		return len(q) == 1 && q[0].Attempts >= 1
	})
	e.Clock.Advance(2 * time.Hour) // four lifetimes of a token
	e.startRelay(t)
	m := e.nextMail(t)
	if !strings.Contains(m.Text, "30 minutes") {
		t.Errorf("mail does not give the lifetime:\n%s", m.Text)
	}
	_, token := resetLink(t, m)
	e.Clock.Advance(30*time.Minute - time.Second)
	if !e.ResetTokenValid(t, token) {
		t.Fatal("the delayed mail's token is not valid for the lifetime after delivery")
	}
	e.Clock.Advance(time.Second)
	if e.ResetTokenValid(t, token) {
		t.Fatal("the token outlives the lifetime counted from delivery")
	}
	e.ProblemCode(t, e.postReset(token, freshPassword), http.StatusBadRequest)
}

// RT2: two requests while SMTP is down give two mails; only the link of the
// last one delivered works.
func TestForgotTwiceOnlyLastMailWorks(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{relayDown: true})
	e.CreateUser(t, "alice@example.com", oldPassword)
	e.forgot(t, "alice@example.com")
	e.Clock.Advance(time.Minute)
	e.forgot(t, "alice@example.com")
	waitUntil(t, "failed delivery attempts", func() bool {
		q := e.queuedJobs(t)
		return len(q) == 2 && q[0].Attempts >= 1
	})
	e.startRelay(t)
	_, first := resetLink(t, e.nextMail(t))
	_, last := resetLink(t, e.nextMail(t))
	if first == last {
		t.Fatal("two mails carry one token")
	}
	e.noMail(t)
	if code := e.ProblemCode(t, e.postReset(first, freshPassword), http.StatusBadRequest); code != "invalid_token" {
		t.Fatalf("first mail's link: code %q, want invalid_token", code)
	}
	if resp := e.postReset(last, freshPassword); resp.StatusCode != http.StatusOK {
		t.Fatalf("last mail's link: %d %s", resp.StatusCode, e.Body(t, resp))
	}
}

// The steps one at a time, without a queue: a request voids the user's
// token at once, before its own mail is delivered (FG, RT2); each delivery
// attempt mints a fresh token that voids the one before (a failed attempt's
// link never works); the token is valid from the attempt for the lifetime.
func TestPrepareMailMintsTokenPerAttempt(t *testing.T) {
	e := newTestEnv(t)
	alice := e.CreateUser(t, "alice@example.com", oldPassword)
	request := func() storage.Mail {
		t.Helper()
		before := len(e.queuedJobs(t))
		if resp := e.PostJSON("/auth/forgot", map[string]string{"email": "alice@example.com"}); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("forgot: %d", resp.StatusCode)
		}
		q := e.queuedJobs(t)
		if len(q) != before+1 {
			t.Fatalf("queue %+v after a request, want one more job", q)
		}
		return q[len(q)-1]
	}
	deliver := func(job storage.Mail) string {
		t.Helper()
		m, err := e.Handler.PrepareMail(t.Context(), job)
		if err != nil {
			t.Fatalf("PrepareMail: %v", err)
		}
		if m.To != alice.Email || m.ID != job.ID || m.Subject == "" || !m.CreatedAt.Equal(e.Clock.Now()) {
			t.Fatalf("prepared %+v for job %+v", m, job)
		}
		_, token := resetLink(t, mailed{Text: m.Text, HTML: m.HTML})
		return token
	}

	job := request()
	want := storage.Mail{ID: job.ID, Kind: storage.MailKindPasswordReset, UserID: alice.ID, To: alice.Email,
		CreatedAt: e.Clock.Now(), NextAttempt: e.Clock.Now()}
	if job != want {
		t.Fatalf("queued job %+v, want %+v", job, want)
	}
	e.Clock.Advance(time.Hour)
	first := deliver(job)
	retried := deliver(job) // the first attempt failed
	if e.ResetTokenValid(t, first) || !e.ResetTokenValid(t, retried) {
		t.Fatal("a retry does not void the token of the failed attempt")
	}
	if stored := e.queuedJobs(t); len(stored) != 1 || stored[0] != job {
		t.Fatalf("preparing changed the queued job: %+v", stored)
	}

	e.Clock.Advance(time.Minute)
	second := request()
	if e.ResetTokenValid(t, retried) {
		t.Fatal("a new request left the older token valid until its mail goes out")
	}
	e.Clock.Advance(10 * time.Minute)
	token := deliver(second)
	e.Clock.Advance(30*time.Minute - time.Nanosecond)
	if !e.ResetTokenValid(t, token) {
		t.Fatal("the token expires before the lifetime counted from delivery")
	}
	e.Clock.Advance(time.Nanosecond)
	if e.ResetTokenValid(t, token) {
		t.Fatal("the token outlives the lifetime counted from delivery")
	}
}

// PrepareMail drops a job whose user is gone (storage.ErrNotFound, which the
// queue treats as permanent), returns a ready message as it is and refuses
// a kind it does not know.
func TestPrepareMailOtherCases(t *testing.T) {
	e := newTestEnv(t)
	gone := storage.Mail{ID: 1, Kind: storage.MailKindPasswordReset, UserID: randomUserID(), To: "gone@example.com"}
	if _, err := e.Handler.PrepareMail(t.Context(), gone); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("job of an unknown user: %v, want storage.ErrNotFound", err)
	}
	ready := storage.Mail{ID: 2, To: "bob@example.com", Subject: "Your password was changed", Text: "t", HTML: "h"}
	if m, err := e.Handler.PrepareMail(t.Context(), ready); err != nil || m != ready {
		t.Errorf("ready message: %+v, %v; want it unchanged", m, err)
	}
	if _, err := e.Handler.PrepareMail(t.Context(), storage.Mail{ID: 3, Kind: "newsletter", To: "bob@example.com"}); err == nil {
		t.Error("unknown kind prepared without an error")
	}
}
