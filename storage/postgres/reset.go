package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/jackc/pgx/v5"
)

// lockUser reads the user FOR UPDATE inside tx: writers of one user's
// records take turns. Unknown user: storage.ErrNotFound.
func lockUser(ctx context.Context, tx pgx.Tx, userID string) (storage.User, error) {
	u, err := scanUser(tx.QueryRow(ctx, "SELECT "+userColumns+" FROM users WHERE id = $1 FOR UPDATE", userID))
	if err != nil {
		return storage.User{}, wrap("user", err)
	}
	return u, nil
}

// tokenKind is one kind of mailed token (a reset, an invitation): its table
// and the kind of mail job that mints it. Each kind has a table of its own,
// so that neither is ever accepted as the other (AD2).
type tokenKind struct {
	table    string // a constant: spliced into SQL
	mailKind string
	what     string // names the operation in errors
}

var (
	resetTokens  = tokenKind{table: "reset_tokens", mailKind: storage.MailKindPasswordReset, what: "reset"}
	inviteTokens = tokenKind{table: "invite_tokens", mailKind: storage.MailKindInvite, what: "invite"}
)

// queueTokenMail, inside tx, voids every token of kind k of u (locked by
// the caller) and queues the job that mints a new one at delivery, due at
// now. The job holds no token.
func queueTokenMail(ctx context.Context, tx pgx.Tx, k tokenKind, u storage.User, now time.Time) error {
	if _, err := tx.Exec(ctx, "DELETE FROM "+k.table+" WHERE user_id = $1", u.ID); err != nil {
		return wrap("queue "+k.what+" mail", err)
	}
	_, err := enqueueMail(ctx, tx, storage.Mail{
		Kind: k.mailKind, UserID: u.ID, To: u.Email, CreatedAt: now, NextAttempt: now,
	})
	return err
}

// lockAndQueueTokenMail is QueueResetMail and QueueInviteMail: in one
// transaction, queueTokenMail for the user userID. Unknown user:
// storage.ErrNotFound and nothing is written.
func (s *Store) lockAndQueueTokenMail(ctx context.Context, k tokenKind, userID string, now time.Time) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		u, err := lockUser(ctx, tx, userID)
		if err != nil {
			return err
		}
		return queueTokenMail(ctx, tx, k, u, now)
	})
}

// issueToken is IssueResetToken and IssueInviteToken: in one transaction,
// it stores t as a token of kind k and voids every other token of kind k of
// t.UserID. A user the token could not act for (unknown, disabled, or for
// an invitation one with a password) is storage.ErrNotFound and nothing is
// written: a job queued before a disable mints nothing after it.
func (s *Store) issueToken(ctx context.Context, k tokenKind, t storage.ResetToken) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		u, err := lockUser(ctx, tx, t.UserID)
		if err != nil {
			return err
		}
		if u.Disabled || k == inviteTokens && u.PasswordHash != "" {
			return notFound(k.what + " token's user")
		}
		if _, err := tx.Exec(ctx, "DELETE FROM "+k.table+" WHERE user_id = $1 OR hash = $2", t.UserID, t.Hash[:]); err != nil {
			return wrap("issue "+k.what+" token", err)
		}
		_, err = tx.Exec(ctx, "INSERT INTO "+k.table+" (hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)",
			t.Hash[:], t.UserID, t.CreatedAt, t.ExpiresAt)
		return wrap2("issue "+k.what+" token", err)
	})
}

// deleteExpiredTokens deletes tokens of kind k whose ExpiresAt is not after
// now, in chunks, and reports how many.
func (s *Store) deleteExpiredTokens(ctx context.Context, k tokenKind, now time.Time) (int, error) {
	return sweep(ctx, s, "DELETE FROM "+k.table+" WHERE hash IN (SELECT hash FROM "+k.table+
		" WHERE expires_at <= $1 LIMIT $2)", now, sweepChunk)
}

// QueueResetMail, in one transaction, voids every reset token of the user
// and queues a password reset job for them, due at now. Unknown user:
// storage.ErrNotFound and nothing is written.
func (s *Store) QueueResetMail(ctx context.Context, userID string, now time.Time) error {
	return s.lockAndQueueTokenMail(ctx, resetTokens, userID, now)
}

// QueueResetRequest is POST /auth/forgot's one store call (issue 10), the
// same work for every address: in one transaction it looks the normalized
// email up; for an account it does what QueueResetMail does and returns the
// user; for an unknown address it overwrites the one marker row of
// reset_requests, so that the request costs a commit too without growing
// the database, and returns storage.ErrNotFound. It returns once committed.
func (s *Store) QueueResetRequest(ctx context.Context, email string, now time.Time) (storage.User, error) {
	var u storage.User
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		u, err = scanUser(tx.QueryRow(ctx, "SELECT "+userColumns+" FROM users WHERE email = $1 FOR UPDATE", storage.NormalizeEmail(email)))
		if err == nil && u.Disabled { // mailed nothing, at the cost of an unknown address (AP2)
			err = pgx.ErrNoRows
		}
		if errors.Is(err, pgx.ErrNoRows) {
			u = storage.User{}
			_, err = tx.Exec(ctx, `INSERT INTO reset_requests (name, at) VALUES ('last_unknown', $1)
				ON CONFLICT (name) DO UPDATE SET at = excluded.at`, now)
			return wrap2("reset request", err)
		}
		if err != nil {
			return wrap("reset request", err)
		}
		return queueTokenMail(ctx, tx, resetTokens, u, now)
	})
	if err != nil {
		return storage.User{}, err
	}
	if u.ID == "" {
		return storage.User{}, notFound("user by email")
	}
	return u, nil
}

// IssueResetToken, in one transaction, stores t and voids every other token
// of t.UserID. Unknown user: storage.ErrNotFound and nothing is written.
func (s *Store) IssueResetToken(ctx context.Context, t storage.ResetToken) error {
	return s.issueToken(ctx, resetTokens, t)
}

// ResetTokenUser returns the user of a valid token (known, unused, not
// expired at now, its user not disabled) without consuming it; otherwise
// storage.ErrNotFound.
func (s *Store) ResetTokenUser(ctx context.Context, tokenHash storage.Hash, now time.Time) (storage.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, "SELECT "+prefixed("u.", userColumns)+
		" FROM reset_tokens t JOIN users u ON u.id = t.user_id WHERE t.hash = $1 AND t.expires_at > $2 AND NOT u.disabled",
		tokenHash[:], now))
	if err != nil {
		return storage.User{}, wrap("reset token", err)
	}
	return u, nil
}

// CompleteReset, in one transaction: consumes a valid token of an enabled
// user (else storage.ErrNotFound, nothing written), sets the password hash,
// voids the user's other tokens, bumps the user's Epoch, deletes (and
// notifies) every session of the user and queues notice unless notice.To
// is empty. The user's row is locked before the token's (takeToken). Of
// concurrent calls with one token exactly one succeeds: the DELETE takes
// the row once.
func (s *Store) CompleteReset(ctx context.Context, tokenHash storage.Hash, now time.Time,
	passwordHash string, notice storage.Mail) (storage.User, int, error) {
	var (
		u        storage.User
		sessions int
	)
	err := s.tx(ctx, func(tx pgx.Tx) error {
		locked, err := takeToken(ctx, tx, resetTokens, tokenHash, now)
		if err != nil {
			return err
		}
		if locked.Disabled {
			return notFound("reset token of a disabled user")
		}
		// Voids the user's other tokens too.
		if u, sessions, err = replacePassword(ctx, tx, locked.ID, passwordHash); err != nil {
			return err
		}
		if notice.To != "" {
			_, err = enqueueMail(ctx, tx, withTimes(notice, now))
		}
		return err
	})
	if err != nil {
		return storage.User{}, 0, err
	}
	return u, sessions, nil
}

// takeToken, inside tx, consumes the valid token h of kind k and returns
// its user, locked. The user's row is locked before the token's, the order
// every change of a user's credentials takes (a disable voids the tokens
// under that lock), so that none of them deadlocks with another. A token
// unknown, expired, or taken meanwhile by a concurrent call or a void:
// storage.ErrNotFound.
func takeToken(ctx context.Context, tx pgx.Tx, k tokenKind, h storage.Hash, now time.Time) (storage.User, error) {
	var userID string
	err := tx.QueryRow(ctx, "SELECT user_id FROM "+k.table+" WHERE hash = $1 AND expires_at > $2", h[:], now).Scan(&userID)
	if err != nil {
		return storage.User{}, wrap(k.what+" token", err)
	}
	u, err := lockUser(ctx, tx, userID)
	if err != nil {
		return storage.User{}, err
	}
	tag, err := tx.Exec(ctx, "DELETE FROM "+k.table+" WHERE hash = $1 AND expires_at > $2", h[:], now)
	if err != nil {
		return storage.User{}, wrap(k.what+" token", err)
	}
	if tag.RowsAffected() == 0 {
		return storage.User{}, notFound(k.what + " token")
	}
	return u, nil
}

// DeleteExpiredResetTokens deletes tokens whose ExpiresAt is not after now and reports how many.
func (s *Store) DeleteExpiredResetTokens(ctx context.Context, now time.Time) (int, error) {
	return s.deleteExpiredTokens(ctx, resetTokens, now)
}
