package postgres

import (
	"context"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/jackc/pgx/v5"
)

// Invite tokens live in invite_tokens, apart from reset_tokens, so that
// neither kind of token is ever accepted as the other.

// QueueInviteMail, in one transaction, voids every invite token of the user
// and queues an invitation job (storage.MailKindInvite) due at now. The job
// holds no token: the mail queue mints one at delivery (IssueInviteToken).
// Unknown user: storage.ErrNotFound and nothing is written.
func (s *Store) QueueInviteMail(ctx context.Context, userID string, now time.Time) error {
	return s.lockAndQueueTokenMail(ctx, inviteTokens, userID, now)
}

// IssueInviteToken, in one transaction, stores t and voids every other
// invite token of t.UserID. Unknown user: storage.ErrNotFound.
func (s *Store) IssueInviteToken(ctx context.Context, t storage.ResetToken) error {
	return s.issueToken(ctx, inviteTokens, t)
}

// InviteTokenUser returns the user of a valid invite token (known, unused,
// not expired at now) without consuming it; otherwise storage.ErrNotFound.
func (s *Store) InviteTokenUser(ctx context.Context, tokenHash storage.Hash, now time.Time) (storage.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, "SELECT "+prefixed("u.", userColumns)+
		" FROM invite_tokens t JOIN users u ON u.id = t.user_id"+
		" WHERE t.hash = $1 AND t.expires_at > $2 AND u.password_hash = '' AND NOT u.disabled",
		tokenHash[:], now))
	if err != nil {
		return storage.User{}, wrap("invite token", err)
	}
	return u, nil
}

// CompleteInvite, in one transaction: consumes a valid invite token (else
// storage.ErrNotFound, nothing written) with every other invite token of
// the user and sets the password hash. The user's row is locked before the
// token's (takeToken). Of concurrent calls with one token exactly one
// succeeds: the DELETE takes the row once.
func (s *Store) CompleteInvite(ctx context.Context, tokenHash storage.Hash, now time.Time, passwordHash string) (storage.User, error) {
	var u storage.User
	err := s.tx(ctx, func(tx pgx.Tx) error {
		locked, err := takeToken(ctx, tx, inviteTokens, tokenHash, now)
		if err != nil {
			return err
		}
		// An invitation sets a first password only (AD2): once the user has
		// one, or is disabled, the link is void (and nothing is written).
		if locked.PasswordHash != "" || locked.Disabled {
			return notFound("invite token")
		}
		u, err = scanUser(tx.QueryRow(ctx, "UPDATE users SET password_hash = $2 WHERE id = $1 RETURNING "+userColumns,
			locked.ID, passwordHash))
		if err != nil {
			return wrap("complete invite: user", err)
		}
		_, err = tx.Exec(ctx, "DELETE FROM invite_tokens WHERE user_id = $1", u.ID)
		return wrap2("complete invite", err)
	})
	if err != nil {
		return storage.User{}, err
	}
	return u, nil
}

// DeleteExpiredInviteTokens deletes invite tokens whose ExpiresAt is not
// after now, in chunks, and reports how many.
func (s *Store) DeleteExpiredInviteTokens(ctx context.Context, now time.Time) (int, error) {
	return s.deleteExpiredTokens(ctx, inviteTokens, now)
}
