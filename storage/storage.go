// Package storage owns Gatehouse's record types, the sentinel errors every
// backend returns, the Store contract that a backend implements, and the
// syntax of the emails it keeps (email.go: NormalizeEmail, ValidAddress).
//
// Dependencies: storage imports only the standard library. Backends live in
// sub-packages (storage/bolt, storage/postgres) and import storage, as does
// the per-replica session cache storage/cache, a decorator over a backend;
// the conformance suite in storage/storagetest runs the same semantics tests
// against each of them.
// Consumers (proxy, authflows) declare the small interfaces they need
// themselves; Store is the union a backend must provide.
//
// Secrets never reach a backend in the clear: session ids, reset tokens,
// API tokens and OAuth states are stored by their SHA-256 (see Hash).
package storage

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"
)

// Sentinel errors. Backends wrap them with %w; callers test with errors.Is.
var (
	// ErrNotFound: no such record, or the record has expired.
	ErrNotFound = errors.New("storage: not found")
	// ErrEmailTaken: another user already has this email.
	ErrEmailTaken = errors.New("storage: email already in use")
	// ErrIdentityInUse: the provider account is linked to another user.
	ErrIdentityInUse = errors.New("storage: identity linked to another user")
	// ErrNotLinked: the user has no identity of that provider.
	ErrNotLinked = errors.New("storage: identity not linked")
	// ErrLastLoginMethod: removing the identity would leave the user no way to sign in.
	ErrLastLoginMethod = errors.New("storage: last login method")
	// ErrCredentialsChanged: the user's credentials or state changed (or the
	// user is gone or disabled) since the caller checked them; nothing was
	// written. A sign-in that gets it must start over.
	ErrCredentialsChanged = errors.New("storage: user disabled, deleted or credentials changed")
)

// HashSize is the length of a SHA-256 digest.
const HashSize = sha256.Size

// Hash is the SHA-256 of a secret (session id, reset token, OAuth state).
// Only hashes are stored, so a copy of the database signs nobody in.
type Hash [HashSize]byte

// HashSecret returns the SHA-256 of a secret as it travels on the wire.
// Secrets of the usual size are hashed from a stack copy: no allocation on the
// per-request path.
func HashSecret(secret string) Hash {
	var buf [128]byte
	if len(secret) <= len(buf) {
		n := copy(buf[:], secret)
		return sha256.Sum256(buf[:n])
	}
	return sha256.Sum256([]byte(secret))
}

// NewUserID returns a new user id: 128 random bits in lowercase hex.
func NewUserID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// User is an account. PasswordHash is an argon2id PHC string, or empty for an
// account that signs in only through a linked provider.
type User struct {
	ID           string // 32 lowercase hex characters, random
	Email        string // normalized (NormalizeEmail)
	PasswordHash string
	CreatedAt    time.Time
	// Disabled users are refused at sign-in and on every request.
	Disabled bool
	// Epoch is the user's credential epoch: it grows with every change that
	// must end the user's sessions (reset, password change, disable,
	// revoke-sessions). A session records the epoch it was made under.
	Epoch uint64
}

// Identity is a provider account linked to a user, keyed by Provider and the
// provider's stable user id (Google "sub", GitHub numeric "id").
type Identity struct {
	Provider  string // "google" or "github"
	Subject   string
	Email     string // the provider's verified email at link time, may be empty
	UserID    string
	CreatedAt time.Time
}

// Session is a signed-in browser. The raw session id lives only in the cookie;
// the record is keyed by its hash. Email is copied from the user so that the
// per-request lookup is one read.
type Session struct {
	IDHash Hash
	UserID string
	Email  string
	// CreatedAt is the sign-in time (the assertion's auth_time, what a
	// route's max-age and the account page's 10-minute rule measure): a
	// re-issue of the session (password change, second-factor step) keeps
	// it, as it keeps ExpiresAt.
	CreatedAt time.Time
	ExpiresAt time.Time // absolute lifetime
	LastSeen  time.Time // written at most once a minute (see TouchSessions)

	// Epoch is the user's credential epoch when the session was made.
	Epoch uint64
	// Method is the first factor the session signed in with: "pwd", "hwk"
	// (a passkey, which counts as two factors) or the provider name
	// ("google", "github", "oidc"). See AMR.
	Method string
	// SecondFactor is the second factor given at sign-in: "otp", "hwk" or
	// "rec", or empty.
	SecondFactor string
	// Groups are the groups the sign-in earned, comma-separated as sent in
	// X-Forwarded-Groups ("github:org,github:org/team,google:corp.com").
	Groups string
	// IP and UserAgent describe the browser that signed in (account page).
	IP        string
	UserAgent string
}

// ResetToken is a pending password reset, keyed by the hash of the mailed token.
type ResetToken struct {
	Hash      Hash
	UserID    string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// OAuth flow purposes.
const (
	PurposeLogin = "login"
	PurposeLink  = "link"
)

// OAuthFlow is an authorization request in progress, keyed by the hash of the
// OAuth state. It is kept in the store, not in memory, so it survives a
// restart and could complete on another replica.
type OAuthFlow struct {
	StateHash   Hash
	Provider    string
	Purpose     string // PurposeLogin or PurposeLink
	Verifier    string // PKCE code verifier
	Nonce       string // OIDC nonce (Google)
	Redirect    string // validated local path to return to
	BrowserHash Hash   // hash of the transaction cookie that binds the flow to a browser
	SessionHash Hash   // link only: the session that started the flow
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// Mail kinds. A queued Mail is either a ready message (MailKindMessage:
// Subject, Text and HTML are what is sent) or a job that the mail queue turns
// into a message just before each delivery attempt, so that a secret the
// message carries is made then and never stored: MailKindPasswordReset is
// "mail UserID a reset link", its token minted at delivery (RT1).
const (
	MailKindMessage       = ""
	MailKindPasswordReset = "password_reset"
	// MailKindInvite is "mail UserID an invitation link", its invite token
	// minted at delivery (IssueInviteToken), like a reset link.
	MailKindInvite = "invite"
	// MailKindPasswordChanged is "tell UserID that its password was
	// changed at CreatedAt and its devices signed out" (RS6), queued by
	// every path that changes a password (a reset, the account page, an
	// administrator's set-password) and rendered at delivery from the
	// server's templates (the CLI on a file has none). Build it with
	// PasswordChangedJob.
	MailKindPasswordChanged = "password_changed"
)

// PasswordChangedKeptSession is the Subject of a MailKindPasswordChanged
// job whose change was made from a browser that stays signed in (the
// account page): the notice then says every other device was signed out.
const PasswordChangedKeptSession = "kept_session"

// PasswordChangedJob is the notice job for a password of u changed at
// at; keptSession: the browser that made the change stays signed in.
func PasswordChangedJob(u User, at time.Time, keptSession bool) Mail {
	m := Mail{Kind: MailKindPasswordChanged, UserID: u.ID, To: u.Email, CreatedAt: at, NextAttempt: at}
	if keptSession {
		m.Subject = PasswordChangedKeptSession
	}
	return m
}

// Mail is a queued outgoing message or job (see the kinds). It is deleted
// once delivered. A queued Mail never holds a secret.
type Mail struct {
	ID          uint64 // assigned by EnqueueMail / QueueResetMail
	Kind        string // MailKindMessage or a job kind
	UserID      string // the account a job is for; empty for a message
	To          string
	Subject     string // empty for a job (but see PasswordChangedKeptSession)
	Text        string // empty for a job
	HTML        string // empty for a job
	Attempts    int
	NextAttempt time.Time
	CreatedAt   time.Time
}

// Store is everything a backend provides. Every method is atomic on its own.
type Store interface {
	// Users.
	CreateUser(ctx context.Context, u User) error // ErrEmailTaken
	UserByID(ctx context.Context, id string) (User, error)
	UserByEmail(ctx context.Context, email string) (User, error) // email is normalized by the store
	ListUsers(ctx context.Context) ([]User, error)
	// SetPasswordHash is an administrator's password change: in one
	// transaction it replaces the user's password hash (empty removes the
	// password), bumps the user's credential Epoch (no session checked
	// before can be created after, see CreateSession), voids every reset
	// token of the user and deletes every session of the user, and reports
	// how many sessions went (CR1). ErrNotFound for an unknown user.
	SetPasswordHash(ctx context.Context, userID, hash string) (sessionsDeleted int, err error)
	// ChangePassword is a password change the user asked for: what
	// SetPasswordHash does, only if the user is still enabled and at epoch
	// (the Epoch read when the current password was checked); otherwise
	// ErrCredentialsChanged and nothing is written, so a change that checked
	// the old password cannot undo a reset, a revocation or a disable that
	// landed meanwhile. It returns the updated user, whose new Epoch is the
	// one the changing browser's next session must carry.
	ChangePassword(ctx context.Context, userID string, epoch uint64, hash string) (User, int, error)
	// SetUserDisabled sets the user's Disabled flag. Disabling also deletes
	// every session of the user, voids every reset and invitation token of
	// the user (enabling again revives none) and bumps the user's Epoch, in
	// the same transaction, and reports how many
	// sessions went (AP2); enabling deletes nothing. Unknown user:
	// ErrNotFound and nothing is written.
	SetUserDisabled(ctx context.Context, userID string, disabled bool) (sessionsDeleted int, err error)
	// UpgradePasswordHash replaces the hash with newHash only if it is still
	// oldHash (the re-hash of a verified password with current parameters):
	// ErrCredentialsChanged and nothing written otherwise, so it never
	// overwrites a newer hash. It does not bump the Epoch.
	UpgradePasswordHash(ctx context.Context, userID, oldHash, newHash string) error

	// Identities.
	// CreateUserWithIdentity creates a user and links the identity to it in one step:
	// ErrEmailTaken or ErrIdentityInUse and nothing is written.
	CreateUserWithIdentity(ctx context.Context, u User, id Identity) error
	UserByIdentity(ctx context.Context, provider, subject string) (User, error)
	IdentitiesOfUser(ctx context.Context, userID string) ([]Identity, error)
	// LinkIdentity attaches id to id.UserID for the signed-in session whose
	// hash is session, in one transaction and only while that session
	// exists, belongs to id.UserID and its user is enabled and still at the
	// session's Epoch: otherwise ErrCredentialsChanged and nothing is
	// written, so a link that finishes after a reset, a revocation or a
	// disable attaches nothing (OA7). Already linked to that user: nil,
	// nothing changes. Linked to another user: ErrIdentityInUse.
	LinkIdentity(ctx context.Context, id Identity, session Hash) error
	// UnlinkIdentity detaches the user's identity of provider: ErrNotLinked, or
	// ErrLastLoginMethod when the user has no password and no other identity.
	UnlinkIdentity(ctx context.Context, userID, provider string) error

	// Sessions.
	// CreateSession stores s only if, in the same transaction, its user
	// exists, is not Disabled and its Epoch still equals s.Epoch (the epoch
	// read when the credential was checked); otherwise ErrCredentialsChanged
	// and nothing is written. So no session outlives a credential change.
	CreateSession(ctx context.Context, s Session) error
	// Session returns the record for idHash, ErrNotFound if there is none.
	// Expiry is the caller's decision; the lookup writes nothing.
	Session(ctx context.Context, idHash Hash) (Session, error)
	DeleteSession(ctx context.Context, idHash Hash) error
	// DeleteUserSessions deletes every session of the user, bumps the
	// user's Epoch (a sign-in in flight cannot add one afterwards) and
	// reports how many sessions it deleted.
	DeleteUserSessions(ctx context.Context, userID string) (int, error)
	// DeleteOtherSessions is "sign out everywhere else": in one transaction
	// it bumps the user's Epoch, deletes every session of the user but keep
	// and moves keep to the new Epoch, so that a sign-in checked before
	// cannot make a session after (CR1) while keep stands. It reports how
	// many sessions went. keep missing, or not the user's: ErrNotFound and
	// nothing is written.
	DeleteOtherSessions(ctx context.Context, userID string, keep Hash) (int, error)
	// TouchSessions sets LastSeen of the given sessions; unknown ones are skipped.
	TouchSessions(ctx context.Context, lastSeen map[Hash]time.Time) error
	// DeleteExpiredSessions deletes sessions past ExpiresAt, or idle since
	// LastSeen for longer than idle (0: no idle limit), and reports how many.
	DeleteExpiredSessions(ctx context.Context, now time.Time, idle time.Duration) (int, error)

	// Password reset.
	// QueueResetMail, in one transaction, voids every reset token of the
	// user and queues a password reset job for them (Kind
	// MailKindPasswordReset, UserID, To the user's address, due at now);
	// the token is minted only when the job is delivered (IssueResetToken).
	// Unknown user: ErrNotFound and nothing is written.
	QueueResetMail(ctx context.Context, userID string, now time.Time) error
	// QueueResetRequest is POST /auth/forgot's one store call, the same
	// work for every address: in one transaction it looks the (normalized)
	// email up; for an account it does what QueueResetMail does and returns
	// the user; for an unknown address, or a disabled account (which is
	// mailed nothing), it overwrites one fixed-size marker
	// record (so the request costs the same commit without growing the
	// database, DS1) and returns ErrNotFound. It returns once the commit is
	// durable, so a crash after it loses no request. Concurrent calls may
	// share one commit.
	QueueResetRequest(ctx context.Context, email string, now time.Time) (User, error)
	// IssueResetToken stores t and voids every other token of t.UserID, in
	// one transaction. Unknown user: ErrNotFound and nothing is written.
	IssueResetToken(ctx context.Context, t ResetToken) error
	// ResetTokenUser returns the user of a valid token (known, unused, not
	// expired at now, its user not disabled) without consuming it;
	// otherwise ErrNotFound.
	ResetTokenUser(ctx context.Context, tokenHash Hash, now time.Time) (User, error)
	// CompleteReset, in one transaction: checks the token as ResetTokenUser
	// does (ErrNotFound), consumes it, sets the password hash, voids every
	// other token of the user, deletes every session of the user and queues
	// notice (skipped when notice.To is empty). It returns the user and the
	// number of sessions deleted. It bumps the user's Epoch.
	CompleteReset(ctx context.Context, tokenHash Hash, now time.Time, passwordHash string, notice Mail) (User, int, error)
	DeleteExpiredResetTokens(ctx context.Context, now time.Time) (int, error)

	// OAuth flows.
	CreateOAuthFlow(ctx context.Context, f OAuthFlow) error
	// TakeOAuthFlow deletes and returns the flow: single use. Missing or
	// expired at now: ErrNotFound (an expired one is deleted too).
	TakeOAuthFlow(ctx context.Context, stateHash Hash, now time.Time) (OAuthFlow, error)
	DeleteExpiredOAuthFlows(ctx context.Context, now time.Time) (int, error)

	// Mail queue.
	EnqueueMail(ctx context.Context, m Mail) (uint64, error)
	// DueMail returns up to limit messages whose NextAttempt is not after now, oldest first.
	DueMail(ctx context.Context, now time.Time, limit int) ([]Mail, error)
	// ClaimMail is DueMail for several replicas: in one transaction it takes
	// up to limit due messages, oldest first, and moves their NextAttempt to
	// now+lease (returned so), so that no other caller takes them until the
	// lease ends. The claimer then deletes or reschedules each; one that dies
	// leaves them to be taken again after the lease.
	ClaimMail(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Mail, error)
	DeleteMail(ctx context.Context, id uint64) error
	// RescheduleMail records a failed attempt: Attempts+1 and a new NextAttempt.
	RescheduleMail(ctx context.Context, id uint64, next time.Time) error

	// Signing keys of the identity assertions.
	SigningKeyStore

	// Second factors: TOTP, passkeys, recovery codes (factors.go).
	FactorStore

	// API tokens of scripts and services.
	APITokenStore

	// Provider sessions' grants (grants.go).
	GrantStore

	// Administration.
	// DeleteUser deletes the user with its identities, sessions, reset and
	// invite tokens, second factors, API tokens and queued mail, in one
	// transaction (a shared backend tells every replica, as for a
	// revocation). Unknown user:
	// ErrNotFound and nothing is written.
	DeleteUser(ctx context.Context, userID string) error
	// SessionsOfUser returns the user's sessions, newest first (expired ones
	// not yet swept included: Active is the caller's decision).
	SessionsOfUser(ctx context.Context, userID string) ([]Session, error)

	// Invitations: a second token kind beside reset tokens, in its own
	// keyspace, so that neither kind of token is accepted as the other.
	// QueueInviteMail, in one transaction, voids every invite token of the
	// user and queues an invitation job (Kind MailKindInvite, due at now).
	// Unknown user: ErrNotFound.
	QueueInviteMail(ctx context.Context, userID string, now time.Time) error
	// IssueInviteToken stores t and voids every other invite token of
	// t.UserID. Unknown user: ErrNotFound.
	IssueInviteToken(ctx context.Context, t ResetToken) error
	// InviteTokenUser returns the user of a valid invite token without
	// consuming it; otherwise ErrNotFound. An invitation stands only while
	// its user has no password and is enabled: once a password is set
	// (set-password, a reset) or the user is disabled, the token is
	// ErrNotFound (AD2).
	InviteTokenUser(ctx context.Context, tokenHash Hash, now time.Time) (User, error)
	// CompleteInvite, in one transaction: checks the invite token as
	// InviteTokenUser does (ErrNotFound), consumes it with every other
	// invite token of the user and sets the password hash. It returns the
	// updated user.
	CompleteInvite(ctx context.Context, tokenHash Hash, now time.Time, passwordHash string) (User, error)
	// DeleteExpiredInviteTokens deletes invite tokens expired at now and reports how many.
	DeleteExpiredInviteTokens(ctx context.Context, now time.Time) (int, error)

	// Secrets.
	// Secret returns the named server secret, SecretSize random bytes made
	// on first use and kept from then on; concurrent first calls (from
	// every replica of a shared store) all get the one that was stored.
	Secret(ctx context.Context, name string) ([]byte, error)

	// Ping reports whether the store can be read (readiness).
	Ping(ctx context.Context) error
	Close() error
}

// Active reports whether the session still authenticates at now: before its
// absolute expiry and, when idle > 0, seen within the last idle period.
func (s Session) Active(now time.Time, idle time.Duration) bool {
	if !now.Before(s.ExpiresAt) {
		return false
	}
	return idle <= 0 || now.Sub(s.LastSeen) < idle
}

// SecretSize is the length of a secret made by Store.Secret: 256 bits.
const SecretSize = 32
