package storage

import (
	"context"
	"errors"
	"time"
)

// Second factors: a user's TOTP authenticators, passkeys and recovery
// codes, the per-user TOTP step that makes every code single use, the
// short-lived second-factor step between a first factor and the session,
// and the WebAuthn ceremonies in progress. The rules (what a code looks
// like, how a passkey is verified) live in authflows/secondfactor; the
// store keeps the records and makes each decision that must be atomic in
// one call.

// Factor types, as the account page and its JSON name them.
const (
	FactorTOTP    = "totp"
	FactorPasskey = "passkey"
)

// Sentinel errors of the second-factor records.
var (
	// ErrTOTPStepUsed: a code of this time step, or of a later one, was
	// already accepted for the user; the code is refused (RFC 6238 §5.2).
	ErrTOTPStepUsed = errors.New("storage: time step already accepted")
	// ErrPasskeyInUse: a passkey with this credential id is registered (to
	// this user or another).
	ErrPasskeyInUse = errors.New("storage: passkey already registered")
	// ErrPasskeySignCount: the authenticator's signature counter did not
	// grow past the stored one: the credential may have been cloned
	// (WebAuthn §7.2 step 21). Nothing was written.
	ErrPasskeySignCount = errors.New("storage: passkey signature counter did not increase")
	// ErrNoSecondFactor: the user has no confirmed TOTP factor and no
	// passkey, so recovery codes would recover nothing.
	ErrNoSecondFactor = errors.New("storage: user has no second factor")
)

// NewFactorID returns a new factor id: 128 random bits in lowercase hex.
func NewFactorID() string { return NewUserID() }

// TOTPFactor is a TOTP authenticator (RFC 6238) of a user. It is pending
// from its creation until a code made from its secret is confirmed
// (ConfirmTOTP); a pending factor proves nothing and lapses at ExpiresAt.
type TOTPFactor struct {
	ID        string // NewFactorID
	UserID    string
	Name      string
	Secret    []byte // the shared HMAC key
	Confirmed bool
	CreatedAt time.Time
	// ExpiresAt is when a pending factor lapses; zero once confirmed.
	ExpiresAt time.Time
}

// Passkey is a WebAuthn credential registered by a user. Its credential id
// is unique across all users.
type Passkey struct {
	ID                string // NewFactorID: the factor id the account page shows
	UserID            string
	Name              string
	CredentialID      []byte
	PublicKey         []byte // COSE_Key
	AttestationType   string
	AttestationFormat string
	AAGUID            []byte
	SignCount         uint32
	Transports        []string
	// The authenticator data flags last seen: UserVerified once any
	// ceremony verified the user (it never goes back), BackupEligible as
	// registered (it never changes), BackupState as last asserted.
	UserVerified   bool
	BackupEligible bool
	BackupState    bool
	UserHandle     []byte // the WebAuthn user.id the credential holds
	CreatedAt      time.Time
	LastUsedAt     time.Time // zero until the first sign-in with it
}

// PasskeyUse is what a verified assertion reports, for RecordPasskeyUse.
type PasskeyUse struct {
	SignCount    uint32
	UserVerified bool
	BackupState  bool
	At           time.Time
}

// SecondFactors is everything a user has enrolled, oldest first.
type SecondFactors struct {
	TOTP              []TOTPFactor // confirmed and pending
	Passkeys          []Passkey
	RecoveryCodesLeft int
}

// Enrolled reports whether the user has a second factor: a confirmed TOTP
// factor or a passkey. Recovery codes alone are not one.
func (f SecondFactors) Enrolled() bool {
	if len(f.Passkeys) > 0 {
		return true
	}
	for _, t := range f.TOTP {
		if t.Confirmed {
			return true
		}
	}
	return false
}

// SecondFactorStep is a sign-in half done: the first factor checked out and
// the second is awaited. It is keyed by the hash of a random value held in
// a cookie of the browser that signed in, is taken once, and lapses at
// ExpiresAt.
type SecondFactorStep struct {
	BrowserHash Hash
	UserID      string
	// Epoch is the user's credential epoch when the first factor was
	// checked: the session made after the step carries it, so a reset or
	// a revocation in between leaves no session behind (CreateSession).
	Epoch     uint64
	Method    string // the first factor: MethodPassword or a provider name
	Groups    string // the groups the first factor earned (Session.Groups)
	Redirect  string // validated place to return to
	CreatedAt time.Time
	ExpiresAt time.Time
	// SessionCreatedAt and SessionExpiresAt are set when the step adds a
	// second factor to a session (?reauth=second-factor): the session made
	// after the step keeps that session's creation time and absolute
	// expiry, as any re-issue does. Zero for a sign-in.
	SessionCreatedAt time.Time
	SessionExpiresAt time.Time
	// Grant is the provider grant the session made after the step keeps
	// (its Session unset): a provider sign-in's, its tokens sealed by the
	// caller, or that of the session a ?reauth=second-factor upgrades. A
	// zero NextRefresh is due a full interval after the session is made.
	// Nil for a password sign-in.
	Grant *Grant
}

// WebAuthn ceremony purposes.
const (
	CeremonyRegister     = "register"      // a signed-in user adds a passkey
	CeremonyLogin        = "login"         // a passkey sign-in, user unknown until the assertion
	CeremonySecondFactor = "second_factor" // a passkey as the second factor of UserID
)

// WebAuthnCeremony is a WebAuthn registration or authentication in
// progress: the challenge and what the finish step checks, kept in the
// store (so that the finish may land on another replica) under the hash of
// a random value held in a cookie of the browser that began it. It is taken
// once and lapses at ExpiresAt.
type WebAuthnCeremony struct {
	BrowserHash Hash
	Purpose     string // CeremonyRegister, CeremonyLogin or CeremonySecondFactor
	UserID      string // register and second factor: whose ceremony it is
	SessionHash Hash   // register: the session that began it
	Data        []byte // the WebAuthn library's session data, opaque to the store
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// FactorStore is the second-factor part of Store. Every method is atomic on
// its own.
type FactorStore interface {
	// SecondFactors returns the user's TOTP factors (confirmed and
	// pending), passkeys and the number of unused recovery codes. A user
	// without any, or an unknown user, has none: no error.
	SecondFactors(ctx context.Context, userID string) (SecondFactors, error)

	// AddPendingTOTP stores f (which must not be Confirmed) and deletes
	// every other pending TOTP factor of the user, so a user has at most
	// one. Unknown user: ErrNotFound and nothing is written.
	AddPendingTOTP(ctx context.Context, f TOTPFactor) error
	// ConfirmTOTP confirms the user's pending factor factorID with a code
	// of time step step: only if the factor is pending and not expired at
	// now, and step is past the user's last accepted step, which becomes
	// step. When the user had no second factor before, firstRecovery (the
	// hashes of new recovery codes) becomes the user's set of recovery
	// codes and first is true; otherwise firstRecovery is ignored. No such
	// pending factor, or expired: ErrNotFound; step not past the last:
	// ErrTOTPStepUsed; either way nothing is written.
	ConfirmTOTP(ctx context.Context, userID, factorID string, step int64, now time.Time, firstRecovery []Hash) (first bool, err error)
	// AcceptTOTPStep is "accept step for the user if it is past the last
	// accepted one": the user's confirmed factor factorID accepts a code of
	// time step step only if step is greater than the user's last accepted
	// step, which becomes step. Of concurrent calls with the same step,
	// exactly one succeeds. The factor gone or pending: ErrNotFound; step
	// not past the last: ErrTOTPStepUsed.
	AcceptTOTPStep(ctx context.Context, userID, factorID string, step int64) error

	// AddPasskey stores p. A credential id already registered:
	// ErrPasskeyInUse; unknown user: ErrNotFound; nothing is written then.
	// firstRecovery and first as in ConfirmTOTP.
	AddPasskey(ctx context.Context, p Passkey, firstRecovery []Hash) (first bool, err error)
	// PasskeyByCredentialID returns the passkey of that credential id, or
	// ErrNotFound.
	PasskeyByCredentialID(ctx context.Context, credentialID []byte) (Passkey, error)
	// RecordPasskeyUse records a verified assertion of the user's passkey:
	// its signature counter, UserVerified (which only ever turns true),
	// BackupState and LastUsedAt. Unless both counters are zero (an
	// authenticator without one), use.SignCount must be greater than the
	// stored count: otherwise ErrPasskeySignCount and nothing is written.
	// The passkey gone or another user's: ErrNotFound.
	RecordPasskeyUse(ctx context.Context, userID string, credentialID []byte, use PasskeyUse) error

	// RemoveFactor deletes the user's TOTP factor or passkey factorID.
	// When no second factor is left, the recovery codes go too. Not the
	// user's: ErrNotFound.
	RemoveFactor(ctx context.Context, userID, factorID string) error
	// ReplaceRecoveryCodes voids the user's recovery codes and stores
	// codes (hashes) as the new set, in one transaction. A user without a
	// second factor: ErrNoSecondFactor; unknown user: ErrNotFound.
	ReplaceRecoveryCodes(ctx context.Context, userID string, codes []Hash) error
	// UseRecoveryCode consumes code if it is one of the user's unused
	// recovery codes and reports how many are left; otherwise ErrNotFound.
	// Of concurrent calls with the same code, exactly one succeeds.
	UseRecoveryCode(ctx context.Context, userID string, code Hash) (left int, err error)
	// ResetSecondFactor removes every second factor of the user (TOTP
	// factors, pending ones included, and passkeys) and the recovery
	// codes, and reports how many factors went. Unknown user: ErrNotFound.
	ResetSecondFactor(ctx context.Context, userID string) (int, error)

	// CreateSecondFactorStep stores st, replacing any step stored under
	// the same hash. Unknown user: ErrNotFound.
	CreateSecondFactorStep(ctx context.Context, st SecondFactorStep) error
	// SecondFactorStep returns the step without taking it, so that a
	// wrong code leaves it usable. Missing or expired at now: ErrNotFound.
	SecondFactorStep(ctx context.Context, browserHash Hash, now time.Time) (SecondFactorStep, error)
	// TakeSecondFactorStep deletes and returns the step: single use.
	// Missing or expired at now: ErrNotFound (an expired one is deleted).
	TakeSecondFactorStep(ctx context.Context, browserHash Hash, now time.Time) (SecondFactorStep, error)

	// CreateWebAuthnCeremony stores c, replacing any ceremony stored under
	// the same hash.
	CreateWebAuthnCeremony(ctx context.Context, c WebAuthnCeremony) error
	// TakeWebAuthnCeremony deletes and returns the ceremony: single use.
	// Missing or expired at now: ErrNotFound (an expired one is deleted).
	TakeWebAuthnCeremony(ctx context.Context, browserHash Hash, now time.Time) (WebAuthnCeremony, error)

	// DeleteExpiredFactorRecords deletes second-factor steps, WebAuthn
	// ceremonies and pending TOTP factors expired at now, and reports how
	// many records went.
	DeleteExpiredFactorRecords(ctx context.Context, now time.Time) (int, error)
}

// MailKindFactorChanged is "tell UserID that its second factor changed":
// the notice after an enrolment, a removal, new recovery codes or an
// administrator's reset, rendered at delivery. Subject holds which change
// (the FactorNotice… values).
const MailKindFactorChanged = "factor_changed"

// The changes a MailKindFactorChanged job tells of.
const (
	FactorNoticeAdded         = "added"
	FactorNoticeRemoved       = "removed"
	FactorNoticeRecoveryCodes = "recovery_codes"
	FactorNoticeReset         = "reset"
)

// FactorChangedJob is the notice job of a change to u's second factor at at.
func FactorChangedJob(u User, at time.Time, change string) Mail {
	return Mail{Kind: MailKindFactorChanged, UserID: u.ID, To: u.Email, Subject: change, CreatedAt: at, NextAttempt: at}
}
