package storagetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

func mailRecord(n int, next time.Time) storage.Mail {
	return storage.Mail{
		To:          fmt.Sprintf("user%d@example.com", n),
		Subject:     fmt.Sprint("subject ", n),
		Text:        fmt.Sprint("text ", n),
		HTML:        fmt.Sprintf("<p>html %d</p>", n),
		NextAttempt: next,
		CreatedAt:   at(-time.Hour),
	}
}

// wantDue fails unless DueMail(now, limit) returns exactly want, in order.
func wantDue(t *testing.T, s storage.Store, now time.Time, limit int, want ...storage.Mail) {
	t.Helper()
	got, err := s.DueMail(t.Context(), now, limit)
	wantErr(t, "DueMail", err, nil)
	if want == nil {
		want = []storage.Mail{}
	}
	if got == nil {
		got = []storage.Mail{}
	}
	wantEqual(t, fmt.Sprintf("DueMail(%v, %d)", now.Sub(epoch), limit), got, want)
}

func testMail(t *testing.T, o Opener) {
	// enqueue stores mails with the given NextAttempt offsets and returns them with their IDs.
	enqueue := func(t *testing.T, s storage.Store, offsets ...time.Duration) []storage.Mail {
		var queued []storage.Mail
		var last uint64
		for i, d := range offsets {
			m := mailRecord(i, at(d))
			id, err := s.EnqueueMail(t.Context(), m)
			wantErr(t, "EnqueueMail", err, nil)
			if id == 0 || id <= last {
				t.Fatalf("EnqueueMail id %d after %d: want a growing, non-zero id", id, last)
			}
			last, m.ID = id, id
			queued = append(queued, m)
		}
		return queued
	}

	t.Run("DueOldestFirst", func(t *testing.T) {
		s := o.newStore(t)
		// Queued in this order; the NextAttempt order differs on purpose.
		q := enqueue(t, s, 0, -time.Hour, time.Minute, -2*time.Hour, time.Microsecond)
		wantDue(t, s, epoch, 10, q[0], q[1], q[3])
		wantDue(t, s, epoch, 2, q[0], q[1])
		wantDue(t, s, epoch, 0)
		wantDue(t, s, at(time.Minute), 10, q...)
		wantDue(t, s, at(-3*time.Hour), 10)
	})

	t.Run("Reschedule", func(t *testing.T) {
		s := o.newStore(t)
		q := enqueue(t, s, 0, 0)
		wantErr(t, "RescheduleMail", s.RescheduleMail(t.Context(), q[0].ID, at(5*time.Minute)), nil)
		wantDue(t, s, epoch, 10, q[1])
		q[0].Attempts, q[0].NextAttempt = 1, at(5*time.Minute)
		wantDue(t, s, at(5*time.Minute), 10, q[0], q[1])
		wantErr(t, "RescheduleMail again", s.RescheduleMail(t.Context(), q[0].ID, at(20*time.Minute)), nil)
		q[0].Attempts, q[0].NextAttempt = 2, at(20*time.Minute)
		wantDue(t, s, at(20*time.Minute), 10, q[0], q[1])
		err := s.RescheduleMail(t.Context(), q[1].ID+100, epoch)
		wantErr(t, "RescheduleMail of an unknown id", err, storage.ErrNotFound)
	})

	// A job (Kind, UserID, no body) comes back as it was queued, also
	// after a failed attempt.
	t.Run("JobFields", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		job := resetJob(u, epoch)
		id, err := s.EnqueueMail(t.Context(), job)
		wantErr(t, "EnqueueMail of a job", err, nil)
		job.ID = id
		ready := enqueue(t, s, 0)
		wantDue(t, s, epoch, 10, job, ready[0])
		wantErr(t, "RescheduleMail", s.RescheduleMail(t.Context(), id, at(time.Minute)), nil)
		job.Attempts, job.NextAttempt = 1, at(time.Minute)
		wantDue(t, s, at(time.Minute), 10, job, ready[0])
	})

	t.Run("Delete", func(t *testing.T) {
		s := o.newStore(t)
		q := enqueue(t, s, 0, 0, 0)
		wantErr(t, "DeleteMail", s.DeleteMail(t.Context(), q[1].ID), nil)
		wantDue(t, s, epoch, 10, q[0], q[2])
		wantErr(t, "DeleteMail again", s.DeleteMail(t.Context(), q[1].ID), nil)
		wantDue(t, s, epoch, 10, q[0], q[2])
		more := enqueue(t, s, 0)
		if more[0].ID <= q[2].ID {
			t.Fatalf("id %d after deletions reuses an older id (last was %d)", more[0].ID, q[2].ID)
		}
	})

	t.Run("Claim", func(t *testing.T) {
		s := o.newStore(t)
		q := enqueue(t, s, 0, -time.Hour, time.Minute, -2*time.Hour)
		claimed, err := s.ClaimMail(t.Context(), epoch, 10*time.Minute, 2)
		wantErr(t, "ClaimMail", err, nil)
		q[0].NextAttempt, q[1].NextAttempt = at(10*time.Minute), at(10*time.Minute)
		wantEqual(t, "ClaimMail(limit 2)", claimed, []storage.Mail{q[0], q[1]})
		// Claimed mail is not due to anyone else until the lease ends.
		wantDue(t, s, epoch, 10, q[3])
		claimed, err = s.ClaimMail(t.Context(), epoch, 10*time.Minute, 10)
		wantErr(t, "ClaimMail again", err, nil)
		q[3].NextAttempt = at(10 * time.Minute)
		wantEqual(t, "ClaimMail of the rest", claimed, []storage.Mail{q[3]})
		claimed, err = s.ClaimMail(t.Context(), epoch, 10*time.Minute, 10)
		wantErr(t, "ClaimMail with nothing due", err, nil)
		if len(claimed) != 0 {
			t.Fatalf("ClaimMail claimed %d claimed messages again", len(claimed))
		}
		if claimed, err := s.ClaimMail(t.Context(), epoch, time.Minute, 0); err != nil || len(claimed) != 0 {
			t.Fatalf("ClaimMail(limit 0) = %d, %v", len(claimed), err)
		}
		// After the lease, the claimer that died is replaced.
		wantDue(t, s, at(10*time.Minute), 10, q[0], q[1], q[2], q[3])
	})

	t.Run("ClaimConcurrent", func(t *testing.T) {
		// Callers claiming at once never get the same message.
		s := o.newStore(t)
		offsets := make([]time.Duration, 40)
		enqueue(t, s, offsets...)
		var mu sync.Mutex
		seen := map[uint64]int{}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					claimed, err := s.ClaimMail(t.Context(), epoch, time.Hour, 3)
					if err != nil {
						t.Error(err)
						return
					}
					if len(claimed) == 0 {
						return
					}
					mu.Lock()
					for _, m := range claimed {
						seen[m.ID]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(seen) != len(offsets) {
			t.Fatalf("%d messages claimed, want %d", len(seen), len(offsets))
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("message %d claimed %d times", id, n)
			}
		}
	})
}
