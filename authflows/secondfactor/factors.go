package secondfactor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// Store is what Factors needs of the store (storage.Store has it).
type Store interface {
	SecondFactors(ctx context.Context, userID string) (storage.SecondFactors, error)
	AddPendingTOTP(ctx context.Context, f storage.TOTPFactor) error
	ConfirmTOTP(ctx context.Context, userID, factorID string, step int64, now time.Time, firstRecovery []storage.Hash) (bool, error)
	AcceptTOTPStep(ctx context.Context, userID, factorID string, step int64) error
	ReplaceRecoveryCodes(ctx context.Context, userID string, codes []storage.Hash) error
	UseRecoveryCode(ctx context.Context, userID string, code storage.Hash) (int, error)
	stepStore
}

// Defaults of Config.
const (
	// DefaultPendingTOTPTTL: time to scan the QR code and type the first code.
	DefaultPendingTOTPTTL = 15 * time.Minute
	// DefaultStepTTL: the second-factor step lives 5 minutes.
	DefaultStepTTL = 5 * time.Minute
	// maxNameRunes bounds a factor's name.
	maxNameRunes = 64
)

// Config tunes New.
type Config struct {
	// Issuer names the service in authenticator apps (--app-name).
	Issuer string
	// PendingTOTPTTL bounds an unconfirmed TOTP enrolment (default DefaultPendingTOTPTTL).
	PendingTOTPTTL time.Duration
	// StepTTL is the second-factor step's lifetime (default DefaultStepTTL).
	StepTTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Factors enrols and checks TOTP factors and recovery codes, and keeps the
// second-factor step. It is safe for concurrent use.
type Factors struct {
	store Store
	cfg   Config
}

// New returns Factors over store.
func New(store Store, cfg Config) *Factors {
	if cfg.PendingTOTPTTL <= 0 {
		cfg.PendingTOTPTTL = DefaultPendingTOTPTTL
	}
	if cfg.StepTTL <= 0 {
		cfg.StepTTL = DefaultStepTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Factors{store: store, cfg: cfg}
}

// Method names of the second-factor step, as POST /auth/login's "methods" lists them.
const (
	MethodTOTP         = "totp"
	MethodPasskey      = "passkey"
	MethodRecoveryCode = "recovery_code"
)

// Methods lists the ways the user can give a second factor: a TOTP code,
// a passkey, a recovery code (while any is left). None: no second factor.
func Methods(f storage.SecondFactors) []string {
	var methods []string
	for _, t := range f.TOTP {
		if t.Confirmed {
			methods = append(methods, MethodTOTP)
			break
		}
	}
	if len(f.Passkeys) > 0 {
		methods = append(methods, MethodPasskey)
	}
	if len(methods) > 0 && f.RecoveryCodesLeft > 0 {
		methods = append(methods, MethodRecoveryCode)
	}
	return methods
}

// BeginTOTP starts a TOTP enrolment for u: a new secret, stored as the
// user's one pending factor (replacing an earlier pending one), and what
// the authenticator app needs. The factor counts once ConfirmTOTP accepts
// a code made from it.
func (f *Factors) BeginTOTP(ctx context.Context, u storage.User, name string) (Enrolment, error) {
	return f.beginTOTP(ctx, u, name, storage.NewFactorID(), time.Time{})
}

// beginTOTP adds the pending factor id, which lapses after PendingTOTPTTL
// and not before notBefore.
func (f *Factors) beginTOTP(ctx context.Context, u storage.User, name, id string, notBefore time.Time) (Enrolment, error) {
	now := f.cfg.Now()
	factor := storage.TOTPFactor{
		ID: id, UserID: u.ID, Name: FactorName(name, "Authenticator app"),
		Secret: newTOTPSecret(), CreatedAt: now, ExpiresAt: now.Add(f.cfg.PendingTOTPTTL),
	}
	if factor.ExpiresAt.Before(notBefore) {
		factor.ExpiresAt = notBefore
	}
	e, err := enrolment(factor.ID, factor.Secret, f.cfg.Issuer, u.Email)
	if err != nil {
		return Enrolment{}, err
	}
	if err := f.store.AddPendingTOTP(ctx, factor); err != nil {
		return Enrolment{}, fmt.Errorf("secondfactor: begin totp: %w", err)
	}
	return e, nil
}

// ConfirmTOTP completes the enrolment factorID of the user with a code
// from the app: the factor counts from now on, and the code's step is
// spent. When it is the user's first second factor, it returns the user's
// new recovery codes, to be shown once; otherwise none.
// ErrCodeFormat, ErrNoPendingFactor, ErrInvalidCode or ErrCodeReused, and
// nothing is stored.
func (f *Factors) ConfirmTOTP(ctx context.Context, userID, factorID, code string) ([]string, error) {
	code, err := ParseCode(code)
	if err != nil {
		return nil, err
	}
	now := f.cfg.Now()
	have, err := f.store.SecondFactors(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("secondfactor: confirm totp: %w", err)
	}
	var pending *storage.TOTPFactor
	for i, t := range have.TOTP {
		if t.ID == factorID && !t.Confirmed && now.Before(t.ExpiresAt) {
			pending = &have.TOTP[i]
		}
	}
	if pending == nil {
		return nil, ErrNoPendingFactor
	}
	step, ok := matchCode(pending.Secret, code, now)
	if !ok {
		return nil, ErrInvalidCode
	}
	codes, hashes := NewRecoveryCodes()
	first, err := f.store.ConfirmTOTP(ctx, userID, factorID, step, now, hashes)
	switch {
	case errors.Is(err, storage.ErrTOTPStepUsed):
		return nil, ErrCodeReused
	case errors.Is(err, storage.ErrNotFound):
		return nil, ErrNoPendingFactor
	case err != nil:
		return nil, fmt.Errorf("secondfactor: confirm totp: %w", err)
	case !first:
		return nil, nil
	}
	return codes, nil
}

// VerifyTOTP checks a code against the user's confirmed TOTP factors and
// spends its time step: the same code, or any of an earlier step, is
// refused afterwards (ErrCodeReused), and of two concurrent calls with the
// same code one succeeds. ErrCodeFormat or ErrInvalidCode otherwise.
func (f *Factors) VerifyTOTP(ctx context.Context, userID, code string) error {
	code, err := ParseCode(code)
	if err != nil {
		return err
	}
	now := f.cfg.Now()
	have, err := f.store.SecondFactors(ctx, userID)
	if err != nil {
		return fmt.Errorf("secondfactor: verify totp: %w", err)
	}
	var (
		factorID string
		step     int64
	)
	for _, t := range have.TOTP {
		if !t.Confirmed {
			continue
		}
		if s, ok := matchCode(t.Secret, code, now); ok && (factorID == "" || s > step) {
			factorID, step = t.ID, s
		}
	}
	if factorID == "" {
		return ErrInvalidCode
	}
	err = f.store.AcceptTOTPStep(ctx, userID, factorID, step)
	switch {
	case errors.Is(err, storage.ErrTOTPStepUsed):
		return ErrCodeReused
	case errors.Is(err, storage.ErrNotFound): // removed meanwhile
		return ErrInvalidCode
	case err != nil:
		return fmt.Errorf("secondfactor: verify totp: %w", err)
	}
	return nil
}

// UseRecoveryCode spends one of the user's recovery codes and reports how
// many are left. ErrRecoveryCodeFormat or ErrInvalidRecoveryCode (unknown
// or used), and nothing is spent.
func (f *Factors) UseRecoveryCode(ctx context.Context, userID, input string) (int, error) {
	h, err := RecoveryCodeHash(input)
	if err != nil {
		return 0, err
	}
	left, err := f.store.UseRecoveryCode(ctx, userID, h)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return 0, ErrInvalidRecoveryCode
	case err != nil:
		return 0, fmt.Errorf("secondfactor: use recovery code: %w", err)
	}
	return left, nil
}

// RegenerateRecoveryCodes replaces the user's recovery codes with a new
// set, to be shown once: the old set is void at once. A user without a
// second factor: ErrNoSecondFactor.
func (f *Factors) RegenerateRecoveryCodes(ctx context.Context, userID string) ([]string, error) {
	codes, hashes := NewRecoveryCodes()
	err := f.store.ReplaceRecoveryCodes(ctx, userID, hashes)
	switch {
	case errors.Is(err, storage.ErrNoSecondFactor):
		return nil, ErrNoSecondFactor
	case err != nil:
		return nil, fmt.Errorf("secondfactor: regenerate recovery codes: %w", err)
	}
	return codes, nil
}

// FactorName is a factor's name as kept: spaces trimmed and runs of white
// space (and control characters) made one space, at most maxNameRunes
// characters, fallback when nothing is left.
func FactorName(name, fallback string) string {
	var b strings.Builder
	runes, space := 0, false
	for _, r := range name {
		if runes == maxNameRunes {
			break
		}
		if r == utf8.RuneError || unicode.IsSpace(r) || unicode.IsControl(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			runes++
			space = false
			if runes == maxNameRunes {
				break
			}
		}
		b.WriteRune(r)
		runes++
	}
	if b.Len() == 0 {
		return fallback
	}
	return b.String()
}
