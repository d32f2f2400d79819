// Package audit writes the audit trail: one JSON object a line for every
// change to an account or a session, whoever made it (a browser through
// /auth/, an operator through the admin API or the CLI).
//
// Dependencies: audit imports the standard library only. The auth flows,
// the admin API and cmd/gatehouse all record into one Log.
//
// An event carries who and what, never a secret: no password, token, code,
// state or session id has a field here, so none can be written by mistake.
package audit

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Event names: these and no others (README.md, "Administration while running").
const (
	Login            = "login"
	LoginFailed      = "login_failed"
	Logout           = "logout"
	ResetRequested   = "reset_requested"
	ResetCompleted   = "reset_completed"
	InviteSent       = "invite_sent"
	InviteAccepted   = "invite_accepted"
	PasswordChanged  = "password_changed"
	IdentityLinked   = "identity_linked"
	IdentityUnlinked = "identity_unlinked"
	UserCreated      = "user_created"
	UserDisabled     = "user_disabled"
	UserEnabled      = "user_enabled"
	UserDeleted      = "user_deleted"
	SessionsRevoked  = "sessions_revoked"
	AccessDenied     = "access_denied"
	SignupRefused    = "signup_refused"
	TokenCreated     = "token_created"
	TokenRevoked     = "token_revoked"

	FactorAdded              = "factor_added"
	FactorRemoved            = "factor_removed"
	RecoveryCodesRegenerated = "recovery_codes_regenerated"
	SecondFactorFailed       = "second_factor_failed"

	// SessionEndedByProvider: a provider session ended because its
	// provider refused it or the account no longer passes (a refresh), or
	// the provider signed it out (back-channel logout).
	SessionEndedByProvider = "session_ended_by_provider"
)

// Names lists every event name, for tests and documentation.
var Names = []string{
	Login, LoginFailed, Logout, ResetRequested, ResetCompleted, InviteSent, InviteAccepted,
	PasswordChanged, IdentityLinked, IdentityUnlinked, UserCreated, UserDisabled, UserEnabled,
	UserDeleted, SessionsRevoked, AccessDenied, SignupRefused, TokenCreated, TokenRevoked,
	FactorAdded, FactorRemoved, RecoveryCodesRegenerated, SecondFactorFailed,
	SessionEndedByProvider,
}

// Event is one audit record. Empty fields are left out of the line.
type Event struct {
	Event     string `json:"event"`
	RequestID string `json:"request_id,omitempty"`
	ClientIP  string `json:"client_ip,omitempty"`
	UserID    string `json:"user_id,omitempty"`
	Email     string `json:"email,omitempty"`
	Provider  string `json:"provider,omitempty"`
	// TokenID is the public id of an API token (token_created,
	// token_revoked), never the token.
	TokenID string `json:"token_id,omitempty"`
}

// line is an Event as written: the time first.
type line struct {
	Time string `json:"time"`
	Event
}

// Log writes events to one writer, a line each, in the order recorded. A nil
// *Log records nothing, so callers need no check when auditing is off.
type Log struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
	err func(error)
}

// New returns a Log writing to w with times from now (time.Now when nil).
// onError, when not nil, hears about failed writes; the event is then lost
// but the action it records is not undone.
func New(w io.Writer, now func() time.Time, onError func(error)) *Log {
	if now == nil {
		now = time.Now
	}
	if onError == nil {
		onError = func(error) {}
	}
	return &Log{w: w, now: now, err: onError}
}

// Record writes e with the current time.
func (l *Log) Record(e Event) {
	if l == nil {
		return
	}
	b, err := json.Marshal(line{Time: l.now().UTC().Format(time.RFC3339Nano), Event: e})
	if err != nil {
		l.err(err)
		return
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.w.Write(b); err != nil {
		l.err(err)
	}
}
