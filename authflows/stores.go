package authflows

import (
	"context"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/session"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// The store interface of each flow: what that flow's handlers call, and
// nothing else. Store, what the Handler holds, is their union; a backend
// (storage/bolt, storage/postgres, the session cache) satisfies it without
// the flows depending on the whole storage.Store.

// sessionStore: making and ending sessions (session.go) and looking one up
// through the session gate (session.Gate).
type sessionStore interface {
	session.SessionSource
	CreateSession(ctx context.Context, s storage.Session) error
	DeleteSession(ctx context.Context, idHash storage.Hash) error
}

// loginStore: password sign-in (login.go).
type loginStore interface {
	UserByEmail(ctx context.Context, email string) (storage.User, error)
	UserByID(ctx context.Context, id string) (storage.User, error)
	IdentitiesOfUser(ctx context.Context, userID string) ([]storage.Identity, error)
	passwordUpgrader
}

// deviceStore: the device cookie's key (devicecookie.go).
type deviceStore interface {
	Secret(ctx context.Context, name string) ([]byte, error)
}

// accountStore: the account page, its linked identities and sessions
// (account.go, account_sessions.go).
type accountStore interface {
	UserByID(ctx context.Context, id string) (storage.User, error)
	IdentitiesOfUser(ctx context.Context, userID string) ([]storage.Identity, error)
	UnlinkIdentity(ctx context.Context, userID, provider string) error
	SessionsOfUser(ctx context.Context, userID string) ([]storage.Session, error)
	DeleteUserSessions(ctx context.Context, userID string) (int, error)
	DeleteOtherSessions(ctx context.Context, userID string, keep storage.Hash) (int, error)
	ChangePassword(ctx context.Context, userID string, epoch uint64, hash string) (storage.User, int, error)
	EnqueueMail(ctx context.Context, m storage.Mail) (uint64, error)
}

// resetStore: forgot password and reset (reset.go).
type resetStore interface {
	UserByID(ctx context.Context, id string) (storage.User, error)
	QueueResetRequest(ctx context.Context, email string, now time.Time) (storage.User, error)
	IssueResetToken(ctx context.Context, t storage.ResetToken) error
	ResetTokenUser(ctx context.Context, tokenHash storage.Hash, now time.Time) (storage.User, error)
	CompleteReset(ctx context.Context, tokenHash storage.Hash, now time.Time, passwordHash string, notice storage.Mail) (storage.User, int, error)
}

// inviteStore: invitations (invite.go).
type inviteStore interface {
	UserByID(ctx context.Context, id string) (storage.User, error)
	IssueInviteToken(ctx context.Context, t storage.ResetToken) error
	InviteTokenUser(ctx context.Context, tokenHash storage.Hash, now time.Time) (storage.User, error)
	CompleteInvite(ctx context.Context, tokenHash storage.Hash, now time.Time, passwordHash string) (storage.User, error)
}

// oauthStore: OAuth sign-in and linking (oauth_start.go, oauth_callback.go).
type oauthStore interface {
	CreateOAuthFlow(ctx context.Context, f storage.OAuthFlow) error
	TakeOAuthFlow(ctx context.Context, stateHash storage.Hash, now time.Time) (storage.OAuthFlow, error)
	UserByID(ctx context.Context, id string) (storage.User, error)
	UserByIdentity(ctx context.Context, provider, subject string) (storage.User, error)
	IdentitiesOfUser(ctx context.Context, userID string) ([]storage.Identity, error)
	CreateUserWithIdentity(ctx context.Context, u storage.User, id storage.Identity) error
	LinkIdentity(ctx context.Context, id storage.Identity, session storage.Hash) error
}
