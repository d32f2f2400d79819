package postgres

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/jackc/pgx/v5"
)

// RevokeChannel is the NOTIFY channel of revocations. A payload is
// "s:" and the hex hash of one session, "t:" and the hex hash of one API
// token, "u:" and a user id (every session and API token of the user, also
// sent when a user is enabled again), or a heartbeat "h:", a listener's token, ":" and the time
// it was sent in Unix nanoseconds (see Listen).
const RevokeChannel = "gatehouse_revoke"

const sessionColumns = "id_hash, user_id, email, created_at, expires_at, last_seen, epoch, method, groups, ip, user_agent, second_factor"

// sweepChunk bounds the rows one sweep statement deletes, so that a large
// sweep never holds its locks for long.
const sweepChunk = 5000

func scanSession(row pgx.Row) (storage.Session, error) {
	var (
		s     storage.Session
		hash  []byte
		epoch int64
	)
	err := row.Scan(&hash, &s.UserID, &s.Email, &s.CreatedAt, &s.ExpiresAt, &s.LastSeen,
		&epoch, &s.Method, &s.Groups, &s.IP, &s.UserAgent, &s.SecondFactor)
	s.IDHash, s.Epoch = hashFrom(hash), uint64(epoch)
	return s, err
}

// notifySession and notifyUser send, inside tx, the revocation of one
// session or of every session of a user; PostgreSQL delivers it on commit.
func notifySession(ctx context.Context, tx pgx.Tx, h storage.Hash) error {
	_, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", RevokeChannel, "s:"+hex.EncodeToString(h[:]))
	return err
}

func notifyUser(ctx context.Context, tx pgx.Tx, userID string) error {
	_, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", RevokeChannel, "u:"+userID)
	return err
}

// CreateSession stores sess only if, in the same statement, its user
// exists, is not disabled and is still at sess.Epoch: otherwise
// storage.ErrCredentialsChanged and nothing is written. The user's row is
// read FOR SHARE, so a credential change (which updates that row before it
// deletes the user's sessions) either waits for this insert to commit and
// then deletes the new session too, or commits first and this insert sees
// the new epoch and writes nothing: no session outlives a credential change.
// A second session under the same hash is refused (a hash of 256 random
// bits does not repeat).
func (s *Store) CreateSession(ctx context.Context, sess storage.Session) error {
	var users, inserted int
	err := s.pool.QueryRow(ctx, `WITH u AS (
			SELECT id FROM users WHERE id = $2 AND NOT disabled AND epoch = $7 FOR SHARE
		), ins AS (
			INSERT INTO sessions (`+sessionColumns+`)
			SELECT $1, u.id, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12 FROM u
			ON CONFLICT (id_hash) DO NOTHING RETURNING 1
		)
		SELECT (SELECT count(*) FROM u), (SELECT count(*) FROM ins)`,
		sess.IDHash[:], sess.UserID, sess.Email, sess.CreatedAt, sess.ExpiresAt, sess.LastSeen,
		int64(sess.Epoch), sess.Method, sess.Groups, sess.IP, sess.UserAgent, sess.SecondFactor).Scan(&users, &inserted)
	switch {
	case err != nil:
		return wrap("create session", err)
	case users == 0:
		return fmt.Errorf("storage/postgres: create session: %w", storage.ErrCredentialsChanged)
	case inserted == 0:
		return fmt.Errorf("storage/postgres: create session: a session with this id exists")
	}
	return nil
}

// Session returns the record for idHash, storage.ErrNotFound if there is
// none; expiry is the caller's decision.
func (s *Store) Session(ctx context.Context, idHash storage.Hash) (storage.Session, error) {
	sess, err := scanSession(s.pool.QueryRow(ctx, "SELECT "+sessionColumns+" FROM sessions WHERE id_hash = $1", idHash[:]))
	if err != nil {
		return storage.Session{}, wrap("session", err)
	}
	return sess, nil
}

// DeleteSession deletes the session (none: no error) and notifies its revocation.
func (s *Store) DeleteSession(ctx context.Context, idHash storage.Hash) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "DELETE FROM sessions WHERE id_hash = $1", idHash[:])
		if err != nil {
			return wrap("delete session", err)
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		return wrap2("delete session", notifySession(ctx, tx, idHash))
	})
}

// DeleteUserSessions bumps the user's Epoch (a sign-in in flight cannot add
// a session afterwards), deletes every session of the user, notifies it and
// reports how many sessions went.
func (s *Store) DeleteUserSessions(ctx context.Context, userID string) (int, error) {
	var n int
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		n, err = revokeUser(ctx, tx, userID)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// DeleteOtherSessions bumps the user's Epoch, deletes (and notifies) every
// session of the user but keep and moves keep to the new Epoch, in one
// transaction; it reports how many went. keep missing or another user's:
// storage.ErrNotFound, nothing written.
func (s *Store) DeleteOtherSessions(ctx context.Context, userID string, keep storage.Hash) (int, error) {
	var n int
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := lockUser(ctx, tx, userID); err != nil {
			return err
		}
		var epoch int64
		err := tx.QueryRow(ctx, `WITH bumped AS (
				UPDATE users SET epoch = epoch + 1 WHERE id = $1 RETURNING epoch
			) UPDATE sessions SET epoch = (SELECT epoch FROM bumped)
			WHERE id_hash = $2 AND user_id = $1 RETURNING epoch`, userID, keep[:]).Scan(&epoch)
		if err != nil {
			return wrap("sign out elsewhere: the kept session", err)
		}
		tag, err := tx.Exec(ctx, "DELETE FROM sessions WHERE user_id = $1 AND id_hash <> $2", userID, keep[:])
		if err != nil {
			return wrap("sign out elsewhere", err)
		}
		n = int(tag.RowsAffected())
		return wrap2("sign out elsewhere", notifyUser(ctx, tx, userID))
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// revokeUser, inside tx, bumps the user's Epoch and then deletes (and
// notifies) the user's sessions. The update comes first: it waits for any
// CreateSession holding the user's row, so the delete sees its session.
func revokeUser(ctx context.Context, tx pgx.Tx, userID string) (int, error) {
	if _, err := tx.Exec(ctx, "UPDATE users SET epoch = epoch + 1 WHERE id = $1", userID); err != nil {
		return 0, wrap("bump credential epoch", err)
	}
	return deleteUserSessions(ctx, tx, userID)
}

// deleteUserSessions deletes, inside tx, the user's sessions and notifies it.
func deleteUserSessions(ctx context.Context, tx pgx.Tx, userID string) (int, error) {
	tag, err := tx.Exec(ctx, "DELETE FROM sessions WHERE user_id = $1", userID)
	if err != nil {
		return 0, wrap("delete user sessions", err)
	}
	if err := notifyUser(ctx, tx, userID); err != nil {
		return 0, wrap("delete user sessions", err)
	}
	return int(tag.RowsAffected()), nil
}

// SessionsOfUser returns the user's sessions, newest first.
func (s *Store) SessionsOfUser(ctx context.Context, userID string) ([]storage.Session, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+sessionColumns+" FROM sessions WHERE user_id = $1 ORDER BY created_at DESC, id_hash", userID)
	if err != nil {
		return nil, wrap("sessions of user", err)
	}
	sessions, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (storage.Session, error) { return scanSession(r) })
	if err != nil {
		return nil, wrap("sessions of user", err)
	}
	return sessions, nil
}

// TouchSessions sets LastSeen of the given sessions in one statement;
// unknown ones are skipped, and so are rows another transaction holds (SKIP
// LOCKED): a revocation deleting them, or another replica's touch. A touch
// is best effort and must never wait in a lock cycle with a revocation,
// which takes a user's session rows in its own order (40P01 would abort
// one of them). It notifies nothing: a touch revokes nothing.
func (s *Store) TouchSessions(ctx context.Context, lastSeen map[storage.Hash]time.Time) error {
	if len(lastSeen) == 0 {
		return nil
	}
	hashes := make([][]byte, 0, len(lastSeen))
	times := make([]time.Time, 0, len(lastSeen))
	for h, t := range lastSeen {
		hashes = append(hashes, h[:])
		times = append(times, t)
	}
	_, err := s.pool.Exec(ctx, `WITH locked AS (
			SELECT s.id_hash, v.t FROM sessions s
			JOIN unnest($1::bytea[], $2::timestamptz[]) AS v(h, t) ON s.id_hash = v.h
			FOR NO KEY UPDATE OF s SKIP LOCKED
		) UPDATE sessions SET last_seen = locked.t FROM locked WHERE sessions.id_hash = locked.id_hash`, hashes, times)
	return wrap2("touch sessions", err)
}

// DeleteExpiredSessions deletes sessions past ExpiresAt at now, or idle
// since LastSeen for idle or longer (idle 0: no idle limit), in chunks, and
// reports how many. Rows another transaction holds are left for the next
// sweep (SKIP LOCKED), so that a sweep never waits in a lock cycle with a
// revocation. It notifies nothing: a session it deletes is one that
// Session.Active refuses already, on every replica.
func (s *Store) DeleteExpiredSessions(ctx context.Context, now time.Time, idle time.Duration) (int, error) {
	if _, err := s.pool.Exec(ctx, "DELETE FROM used_marks WHERE until <= $1", now); err != nil {
		return 0, wrap("sweep used marks", err)
	}
	idleBefore := now.Add(-idle)
	return sweep(ctx, s, `DELETE FROM sessions WHERE id_hash IN (SELECT id_hash FROM sessions
		WHERE expires_at <= $1 OR ($2 AND last_seen <= $3) LIMIT $4 FOR UPDATE SKIP LOCKED)`, now, idle > 0, idleBefore, sweepChunk)
}

// sweep runs a chunked DELETE until it deletes fewer rows than a chunk.
func sweep(ctx context.Context, s *Store, sql string, args ...any) (int, error) {
	total := 0
	for {
		tag, err := s.pool.Exec(ctx, sql, args...)
		if err != nil {
			return total, wrap("sweep", err)
		}
		n := int(tag.RowsAffected())
		total += n
		if n < sweepChunk {
			return total, nil
		}
	}
}

// ImportSessions stores many sessions at once with COPY (bulk loads: tests,
// benchmarks, a migration from bbolt). The hashes must be new.
func (s *Store) ImportSessions(ctx context.Context, sessions []storage.Session) error {
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"sessions"},
		[]string{"id_hash", "user_id", "email", "created_at", "expires_at", "last_seen", "epoch", "method", "groups", "ip", "user_agent", "second_factor"},
		pgx.CopyFromSlice(len(sessions), func(i int) ([]any, error) {
			sess := &sessions[i]
			return []any{sess.IDHash[:], sess.UserID, sess.Email, sess.CreatedAt, sess.ExpiresAt, sess.LastSeen,
				int64(sess.Epoch), sess.Method, sess.Groups, sess.IP, sess.UserAgent, sess.SecondFactor}, nil
		}))
	return wrap2("import sessions", err)
}
