package bolt

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
)

// EnqueueMail queues m and returns its ID, assigned from the bucket's
// sequence (m.ID is ignored), so IDs grow in queueing order. A zero
// NextAttempt makes the mail due at once.
func (s *Store) EnqueueMail(ctx context.Context, m storage.Mail) (uint64, error) {
	var id uint64
	err := s.update(ctx, func(tx *bbolt.Tx) (err error) {
		id, err = enqueueMail(tx, m)
		return err
	})
	if err != nil {
		return 0, err
	}
	return id, nil
}

// DueMail returns up to limit messages whose NextAttempt is not after now,
// oldest (lowest ID) first; none when limit is not positive.
func (s *Store) DueMail(ctx context.Context, now time.Time, limit int) ([]storage.Mail, error) {
	if limit <= 0 {
		return nil, nil
	}
	var due []storage.Mail
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketMail).Cursor()
		for k, v := c.First(); k != nil && len(due) < limit; k, v = c.Next() {
			m, err := decodeMail(binary.BigEndian.Uint64(k), v)
			if err != nil {
				return err
			}
			if !m.NextAttempt.After(now) {
				due = append(due, m)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return due, nil
}

// ClaimMail takes up to limit due messages, oldest first, and moves their
// NextAttempt to now+lease, in one transaction; none when limit is not
// positive.
func (s *Store) ClaimMail(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]storage.Mail, error) {
	if limit <= 0 {
		return nil, nil
	}
	var claimed []storage.Mail
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		claimed = claimed[:0]
		b := tx.Bucket(bucketMail)
		c := b.Cursor()
		for k, v := c.First(); k != nil && len(claimed) < limit; k, v = c.Next() {
			m, err := decodeMail(binary.BigEndian.Uint64(k), v)
			if err != nil {
				return err
			}
			if !m.NextAttempt.After(now) {
				m.NextAttempt = now.Add(lease)
				claimed = append(claimed, m)
			}
		}
		if len(claimed) == 0 {
			return errNoWrite
		}
		for _, m := range claimed {
			if err := b.Put(mailKey(m.ID), encodeMail(m)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return claimed, nil
}

// DeleteMail removes a delivered message; an unknown id is not an error.
func (s *Store) DeleteMail(ctx context.Context, id uint64) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketMail)
		if b.Get(mailKey(id)) == nil {
			return errNoWrite
		}
		return b.Delete(mailKey(id))
	})
}

// RescheduleMail records a failed attempt: Attempts+1 and NextAttempt set
// to next; storage.ErrNotFound for an unknown id.
func (s *Store) RescheduleMail(ctx context.Context, id uint64, next time.Time) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketMail)
		v := b.Get(mailKey(id))
		if v == nil {
			return notFound("mail")
		}
		m, err := decodeMail(id, v)
		if err != nil {
			return err
		}
		m.Attempts++
		m.NextAttempt = next
		return b.Put(mailKey(id), encodeMail(m))
	})
}

// enqueueMail stores m under the bucket's next sequence number and returns it.
func enqueueMail(tx *bbolt.Tx, m storage.Mail) (uint64, error) {
	b := tx.Bucket(bucketMail)
	id, err := b.NextSequence()
	if err != nil {
		return 0, err
	}
	m.ID = id
	return id, b.Put(mailKey(id), encodeMail(m))
}

// withTimes fills a zero CreatedAt or NextAttempt of m with t.
func withTimes(m storage.Mail, t time.Time) storage.Mail {
	if m.CreatedAt.IsZero() {
		m.CreatedAt = t
	}
	if m.NextAttempt.IsZero() {
		m.NextAttempt = t
	}
	return m
}
