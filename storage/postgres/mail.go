package postgres

import (
	"context"
	"sort"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/jackc/pgx/v5"
)

const mailColumns = "id, kind, user_id, to_addr, subject, text_body, html_body, attempts, next_attempt, created_at"

func scanMail(r pgx.CollectableRow) (storage.Mail, error) {
	var (
		m  storage.Mail
		id int64
	)
	err := r.Scan(&id, &m.Kind, &m.UserID, &m.To, &m.Subject, &m.Text, &m.HTML, &m.Attempts, &m.NextAttempt, &m.CreatedAt)
	m.ID = uint64(id)
	return m, err
}

// EnqueueMail queues m and returns its ID from the table's sequence (m.ID
// is ignored), so IDs grow in queueing order.
func (s *Store) EnqueueMail(ctx context.Context, m storage.Mail) (uint64, error) {
	var id uint64
	err := s.tx(ctx, func(tx pgx.Tx) (err error) {
		id, err = enqueueMail(ctx, tx, m)
		return err
	})
	return id, err
}

func enqueueMail(ctx context.Context, tx pgx.Tx, m storage.Mail) (uint64, error) {
	var id int64
	err := tx.QueryRow(ctx, `INSERT INTO mail (kind, user_id, to_addr, subject, text_body, html_body, attempts,
		next_attempt, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
		m.Kind, m.UserID, m.To, m.Subject, m.Text, m.HTML, m.Attempts, m.NextAttempt, m.CreatedAt).Scan(&id)
	if err != nil {
		return 0, wrap("enqueue mail", err)
	}
	return uint64(id), nil
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

// DueMail returns up to limit messages whose NextAttempt is not after now,
// oldest (lowest ID) first; none when limit is not positive.
func (s *Store) DueMail(ctx context.Context, now time.Time, limit int) ([]storage.Mail, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, "SELECT "+mailColumns+" FROM mail WHERE next_attempt <= $1 ORDER BY id LIMIT $2", now, limit)
	if err != nil {
		return nil, wrap("due mail", err)
	}
	due, err := pgx.CollectRows(rows, scanMail)
	if err != nil {
		return nil, wrap("due mail", err)
	}
	return due, nil
}

// ClaimMail takes up to limit due messages, oldest first, and moves their
// NextAttempt to now+lease in one statement; rows another transaction is
// claiming are skipped, not waited for.
func (s *Store) ClaimMail(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]storage.Mail, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `UPDATE mail SET next_attempt = $2 WHERE id IN (SELECT id FROM mail
		WHERE next_attempt <= $1 ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED) RETURNING `+mailColumns,
		now, now.Add(lease), limit)
	if err != nil {
		return nil, wrap("claim mail", err)
	}
	claimed, err := pgx.CollectRows(rows, scanMail)
	if err != nil {
		return nil, wrap("claim mail", err)
	}
	sort.Slice(claimed, func(i, j int) bool { return claimed[i].ID < claimed[j].ID })
	return claimed, nil
}

// DeleteMail removes a delivered message; an unknown id is not an error.
func (s *Store) DeleteMail(ctx context.Context, id uint64) error {
	_, err := s.pool.Exec(ctx, "DELETE FROM mail WHERE id = $1", int64(id))
	return wrap2("delete mail", err)
}

// RescheduleMail records a failed attempt: Attempts+1 and NextAttempt set
// to next; storage.ErrNotFound for an unknown id.
func (s *Store) RescheduleMail(ctx context.Context, id uint64, next time.Time) error {
	tag, err := s.pool.Exec(ctx, "UPDATE mail SET attempts = attempts + 1, next_attempt = $2 WHERE id = $1", int64(id), next)
	if err != nil {
		return wrap("reschedule mail", err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("mail")
	}
	return nil
}
