// Package admin is the administration of a Gatehouse: users, sessions and
// API tokens, changed while the server runs. Service does the work on a store; Handler
// serves a Service as HTTP+JSON (on the Unix socket that cmd/gatehouse
// opens); Client is the same API spoken over that socket. The CLI holds an
// API and does not care which one it has, so a command gives the same
// result and output through the running server or on the database file.
//
// Dependencies: admin → storage, authflows/audit, proxy/policy. The store interface it needs
// (Store) is declared here; password rules come in as a function.
package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// API is every administrative operation. Users are named by email.
type API interface {
	AddUser(ctx context.Context, req AddUserRequest) (User, error)
	ListUsers(ctx context.Context) ([]User, error)
	ShowUser(ctx context.Context, email string) (User, error)
	SetDisabled(ctx context.Context, email string, disabled bool) (Change, error)
	DeleteUser(ctx context.Context, email string) (User, error)
	SetPassword(ctx context.Context, email, password string) (Change, error)
	RevokeSessions(ctx context.Context, email string) (Change, error)
	Sessions(ctx context.Context, email string) ([]Session, error)
	RotateSigningKey(ctx context.Context) (KeyRotation, error)
	TokenAPI        // tokens.go
	SecondFactorAPI // secondfactor.go
}

// KeyRotation is the outcome of RotateSigningKey: the new key's id and how
// long the previous key stays published.
type KeyRotation struct {
	KeyID       string        `json:"kid"`
	RetiredKept time.Duration `json:"retired_kept"`
}

// AddUserRequest creates a user with Password, or, with Invite, without
// one and mails an invitation link.
type AddUserRequest struct {
	Email    string `json:"email"`
	Password string `json:"password,omitempty"`
	Invite   bool   `json:"invite,omitempty"`
}

// User is what the API tells about an account; never the password hash.
type User struct {
	ID          string    `json:"id"`
	Email       string    `json:"email"`
	HasPassword bool      `json:"has_password"`
	Disabled    bool      `json:"disabled"`
	Identities  []string  `json:"identities"` // provider names
	CreatedAt   time.Time `json:"created_at"`
	Sessions    int       `json:"sessions,omitempty"` // stored sessions (ShowUser only)
}

// Change is the outcome of an operation that may end sessions.
type Change struct {
	User            User `json:"user"`
	SessionsRevoked int  `json:"sessions_revoked"`
}

// Session is a signed-in browser of a user, without its id or hash.
type Session struct {
	CreatedAt time.Time `json:"created_at"`
	LastSeen  time.Time `json:"last_seen"`
	ExpiresAt time.Time `json:"expires_at"`
	Method    string    `json:"method"`
	IP        string    `json:"ip"`
	UserAgent string    `json:"user_agent"`
}

// Error codes of Error.
const (
	CodeNotFound       = "not_found"
	CodeEmailTaken     = "email_taken"
	CodeWeakPassword   = "weak_password"
	CodeInvalidRequest = "invalid_request"
)

// Error is a refusal the operator must act on; Message is shown as is.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"detail"`
}

func (e *Error) Error() string { return e.Message }

func refuse(code, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Store is what the Service needs of the storage backend.
type Store interface {
	CreateUser(ctx context.Context, u storage.User) error
	UserByEmail(ctx context.Context, email string) (storage.User, error)
	ListUsers(ctx context.Context) ([]storage.User, error)
	IdentitiesOfUser(ctx context.Context, userID string) ([]storage.Identity, error)
	SetPasswordHash(ctx context.Context, userID, hash string) (sessionsDeleted int, err error)
	SetUserDisabled(ctx context.Context, userID string, disabled bool) (int, error)
	DeleteUser(ctx context.Context, userID string) error
	DeleteUserSessions(ctx context.Context, userID string) (int, error)
	SessionsOfUser(ctx context.Context, userID string) ([]storage.Session, error)
	QueueInviteMail(ctx context.Context, userID string, now time.Time) error
	EnqueueMail(ctx context.Context, m storage.Mail) (uint64, error)
	TokenStore  // tokens.go
	FactorStore // secondfactor.go
}

// Service is the API on a store. Every change is an audit event naming its
// target (AD1) and an event line on Logger.
type Service struct {
	Store Store
	// HashPassword checks a new password against the rules (length, common
	// passwords, the email) and returns its argon2id hash; its error is
	// shown to the operator as the reason.
	HashPassword func(ctx context.Context, password, email string) (string, error)
	Audit        *audit.Log
	Logger       *slog.Logger
	Clock        func() time.Time
	// WakeMailer, when set, is called after an invitation was queued.
	WakeMailer func()
	// RotateKey adds an assertion signing key that signs from now
	// on and returns its id and how long the previous key stays published
	// (`gatehouse keys rotate`). A running server also starts using it at once.
	RotateKey func(ctx context.Context) (KeyRotation, error)
}

var _ API = (*Service)(nil)

func (s *Service) now() time.Time {
	if s.Clock == nil {
		return time.Now()
	}
	return s.Clock()
}

func (s *Service) record(ctx context.Context, event string, u storage.User, attrs ...slog.Attr) {
	s.Audit.Record(audit.Event{Event: event, UserID: u.ID, Email: u.Email})
	if s.Logger != nil {
		s.Logger.LogAttrs(ctx, slog.LevelInfo, "auth event", append([]slog.Attr{
			slog.String("event", event), slog.String("user_id", u.ID)}, append(attrs, slog.String("source", "admin"))...)...)
	}
}

// CheckEmail returns the normalized form of an address an operator gives:
// one plain address by the rules a provider's must meet (EM1,
// storage.ValidAddress), so that no account holds an address with invisible
// or bidi characters, a domain literal, or more than 254 bytes.
func CheckEmail(email string) (string, error) {
	e := storage.NormalizeEmail(email) // lower-cased first: "Élodie@…" is as good as "Alice@…"
	if !storage.ValidAddress(e) {
		return "", refuse(CodeInvalidRequest, "%q is not a plain email address", email)
	}
	return e, nil
}

// AddUser creates the user with a password, or without one and with an
// invitation queued.
func (s *Service) AddUser(ctx context.Context, req AddUserRequest) (User, error) {
	email, err := CheckEmail(req.Email)
	if err != nil {
		return User{}, err
	}
	if req.Invite == (req.Password != "") {
		return User{}, refuse(CodeInvalidRequest, "give either a password or an invitation")
	}
	u := storage.User{ID: storage.NewUserID(), Email: email, CreatedAt: s.now().UTC()}
	if !req.Invite {
		if u.PasswordHash, err = s.HashPassword(ctx, req.Password, email); err != nil {
			return User{}, refuse(CodeWeakPassword, "password refused: %v", err)
		}
	}
	if err := s.Store.CreateUser(ctx, u); err != nil {
		if errors.Is(err, storage.ErrEmailTaken) {
			return User{}, refuse(CodeEmailTaken, "a user with email %s already exists", email)
		}
		return User{}, err
	}
	s.record(ctx, audit.UserCreated, u)
	if req.Invite {
		if err := s.Store.QueueInviteMail(ctx, u.ID, s.now()); err != nil {
			return User{}, fmt.Errorf("user %s created, but queueing the invitation failed: %w", email, err)
		}
		s.record(ctx, audit.InviteSent, u)
		if s.WakeMailer != nil {
			s.WakeMailer()
		}
	}
	return s.describe(ctx, u, false)
}

// ListUsers returns every user, sorted by email.
func (s *Service) ListUsers(ctx context.Context) ([]User, error) {
	users, err := s.Store.ListUsers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]User, 0, len(users))
	for _, u := range users {
		d, err := s.describe(ctx, u, false)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// ShowUser describes one user with the number of its sessions.
func (s *Service) ShowUser(ctx context.Context, email string) (User, error) {
	u, err := s.user(ctx, email)
	if err != nil {
		return User{}, err
	}
	return s.describe(ctx, u, true)
}

// SetDisabled disables (sessions deleted, sign-in refused) or enables the user.
func (s *Service) SetDisabled(ctx context.Context, email string, disabled bool) (Change, error) {
	u, err := s.user(ctx, email)
	if err != nil {
		return Change{}, err
	}
	n, err := s.Store.SetUserDisabled(ctx, u.ID, disabled)
	if err != nil {
		return Change{}, err
	}
	u.Disabled = disabled
	if disabled {
		s.record(ctx, audit.UserDisabled, u, slog.Int("sessions_revoked", n))
	} else {
		s.record(ctx, audit.UserEnabled, u)
	}
	d, err := s.describe(ctx, u, false)
	return Change{User: d, SessionsRevoked: n}, err
}

// DeleteUser deletes the user and everything of it.
func (s *Service) DeleteUser(ctx context.Context, email string) (User, error) {
	u, err := s.user(ctx, email)
	if err != nil {
		return User{}, err
	}
	d, err := s.describe(ctx, u, false)
	if err != nil {
		return User{}, err
	}
	if err := s.Store.DeleteUser(ctx, u.ID); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return User{}, refuse(CodeNotFound, "no user with email %s", u.Email)
		}
		return User{}, err
	}
	s.record(ctx, audit.UserDeleted, u)
	return d, nil
}

// SetPassword replaces the user's password and ends every session of it.
func (s *Service) SetPassword(ctx context.Context, email, password string) (Change, error) {
	u, err := s.user(ctx, email)
	if err != nil {
		return Change{}, err
	}
	if password == "" {
		return Change{}, refuse(CodeInvalidRequest, "no password given")
	}
	hash, err := s.HashPassword(ctx, password, u.Email)
	if err != nil {
		return Change{}, refuse(CodeWeakPassword, "password refused: %v", err)
	}
	n, err := s.Store.SetPasswordHash(ctx, u.ID, hash) // ends the sessions and voids reset links too
	if err != nil {
		return Change{}, err
	}
	u.PasswordHash = hash
	s.record(ctx, audit.PasswordChanged, u, slog.Int("sessions_revoked", n))
	s.mailPasswordNotice(ctx, u)
	d, err := s.describe(ctx, u, false)
	return Change{User: d, SessionsRevoked: n}, err
}

// mailPasswordNotice queues the "your password was changed" mail, as the
// account page and a reset do: if the owner did not ask for the change,
// they learn of it. A failure is logged; the change stands.
func (s *Service) mailPasswordNotice(ctx context.Context, u storage.User) {
	now := s.now()
	_, err := s.Store.EnqueueMail(ctx, storage.PasswordChangedJob(u, now, false))
	if err != nil {
		if s.Logger != nil {
			s.Logger.ErrorContext(ctx, "set password: queue notice mail", "user_id", u.ID, "err", err)
		}
		return
	}
	if s.WakeMailer != nil {
		s.WakeMailer()
	}
}

// RevokeSessions ends every session of the user.
func (s *Service) RevokeSessions(ctx context.Context, email string) (Change, error) {
	u, err := s.user(ctx, email)
	if err != nil {
		return Change{}, err
	}
	n, err := s.Store.DeleteUserSessions(ctx, u.ID)
	if err != nil {
		return Change{}, err
	}
	s.record(ctx, audit.SessionsRevoked, u, slog.Int("sessions_revoked", n))
	d, err := s.describe(ctx, u, false)
	return Change{User: d, SessionsRevoked: n}, err
}

// Sessions lists the user's sessions, newest first.
func (s *Service) Sessions(ctx context.Context, email string) ([]Session, error) {
	u, err := s.user(ctx, email)
	if err != nil {
		return nil, err
	}
	stored, err := s.Store.SessionsOfUser(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	out := make([]Session, 0, len(stored))
	for _, ss := range stored {
		out = append(out, Session{CreatedAt: ss.CreatedAt.UTC(), LastSeen: ss.LastSeen.UTC(), ExpiresAt: ss.ExpiresAt.UTC(),
			Method: ss.Method, IP: ss.IP, UserAgent: ss.UserAgent})
	}
	return out, nil
}

// RotateSigningKey rotates the assertion signing key (see Service.RotateKey).
func (s *Service) RotateSigningKey(ctx context.Context) (KeyRotation, error) {
	if s.RotateKey == nil {
		return KeyRotation{}, errors.New("admin: no signing keys here")
	}
	return s.RotateKey(ctx)
}

// user looks the user up by email: a bad address or an unknown user is an Error.
func (s *Service) user(ctx context.Context, email string) (storage.User, error) {
	e, err := CheckEmail(email)
	if err != nil {
		return storage.User{}, err
	}
	u, err := s.Store.UserByEmail(ctx, e)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.User{}, refuse(CodeNotFound, "no user with email %s", e)
	}
	return u, err
}

func (s *Service) describe(ctx context.Context, u storage.User, withSessions bool) (User, error) {
	ids, err := s.Store.IdentitiesOfUser(ctx, u.ID)
	if err != nil {
		return User{}, err
	}
	d := User{ID: u.ID, Email: u.Email, HasPassword: u.PasswordHash != "", Disabled: u.Disabled,
		Identities: []string{}, CreatedAt: u.CreatedAt.UTC()}
	for _, id := range ids {
		d.Identities = append(d.Identities, id.Provider)
	}
	if withSessions {
		ss, err := s.Store.SessionsOfUser(ctx, u.ID)
		if err != nil {
			return User{}, err
		}
		d.Sessions = len(ss)
	}
	return d, nil
}
