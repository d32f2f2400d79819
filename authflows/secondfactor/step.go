package secondfactor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// stepStore keeps the second-factor steps.
type stepStore interface {
	CreateSecondFactorStep(ctx context.Context, st storage.SecondFactorStep) error
	SecondFactorStep(ctx context.Context, browserHash storage.Hash, now time.Time) (storage.SecondFactorStep, error)
	TakeSecondFactorStep(ctx context.Context, browserHash storage.Hash, now time.Time) (storage.SecondFactorStep, error)
}

// StepStart is a first factor that checked out for a user with a second
// factor: what the session will be made of once the second one is given.
type StepStart struct {
	User     storage.User // as read when the first factor was checked (its Epoch counts)
	Method   string       // storage.MethodPassword or the provider's name
	Groups   string       // the groups the first factor earned
	Redirect string       // validated place to go afterwards
	// Session is the session the step adds a second factor to
	// (?reauth=second-factor), whose creation time and expiry the new
	// session keeps; nil for a sign-in.
	Session *storage.Session
	// Grant is a provider sign-in's grant, kept with the step for the
	// session it makes; nil otherwise.
	Grant *storage.Grant
}

// BeginStep records the step and returns the value for the step cookie
// that binds it to this browser; the store keeps only its hash.
func (f *Factors) BeginStep(ctx context.Context, start StepStart) (string, error) {
	binding, hash := newBinding()
	now := f.cfg.Now()
	st := storage.SecondFactorStep{
		BrowserHash: hash, UserID: start.User.ID, Epoch: start.User.Epoch,
		Method: start.Method, Groups: start.Groups, Redirect: start.Redirect,
		CreatedAt: now, ExpiresAt: now.Add(f.cfg.StepTTL), Grant: start.Grant,
	}
	if start.Session != nil {
		st.SessionCreatedAt, st.SessionExpiresAt = start.Session.CreatedAt, start.Session.ExpiresAt
	}
	err := f.store.CreateSecondFactorStep(ctx, st)
	if err != nil {
		return "", fmt.Errorf("secondfactor: begin step: %w", err)
	}
	return binding, nil
}

// Step returns the step of the step cookie's value without using it up,
// so that a mistyped code can be tried again. ErrStepExpired when there is
// none for this browser or it is over.
func (f *Factors) Step(ctx context.Context, binding string) (storage.SecondFactorStep, error) {
	hash, ok := bindingHash(binding)
	if !ok {
		return storage.SecondFactorStep{}, ErrStepExpired
	}
	st, err := f.store.SecondFactorStep(ctx, hash, f.cfg.Now())
	return st, stepError(err)
}

// FinishStep takes the step once the second factor checked out: single
// use, so of two concurrent finishes one gets it and the other
// ErrStepExpired. The session is made from what it returns.
func (f *Factors) FinishStep(ctx context.Context, binding string) (storage.SecondFactorStep, error) {
	hash, ok := bindingHash(binding)
	if !ok {
		return storage.SecondFactorStep{}, ErrStepExpired
	}
	st, err := f.store.TakeSecondFactorStep(ctx, hash, f.cfg.Now())
	return st, stepError(err)
}

func stepError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrNotFound):
		return ErrStepExpired
	}
	return fmt.Errorf("secondfactor: step: %w", err)
}

// StepTOTP returns the authenticator app enrolment of a user who must
// enrol during the step st: the one begun during this step while it is
// pending, else a new one. Its id is derived from the step's browser hash,
// so the step keeps one secret: the page shown again after a mistyped
// code shows the secret the user already scanned. It lapses no earlier
// than the step.
func (f *Factors) StepTOTP(ctx context.Context, u storage.User, st storage.SecondFactorStep) (Enrolment, error) {
	id := stepFactorID(st.BrowserHash)
	have, err := f.store.SecondFactors(ctx, u.ID)
	if err != nil {
		return Enrolment{}, fmt.Errorf("secondfactor: step totp: %w", err)
	}
	now := f.cfg.Now()
	for _, t := range have.TOTP {
		if t.ID == id && !t.Confirmed && now.Before(t.ExpiresAt) {
			return enrolment(t.ID, t.Secret, f.cfg.Issuer, u.Email)
		}
	}
	return f.beginTOTP(ctx, u, "", id, st.ExpiresAt)
}

// stepFactorID is the id of the pending factor of the step whose browser
// hash is h: a hash of it, of a factor id's shape (32 lowercase hex
// digits), which tells nothing of the step cookie.
func stepFactorID(h storage.Hash) string {
	sum := sha256.Sum256(append([]byte("gatehouse step totp\x00"), h[:]...))
	return hex.EncodeToString(sum[:16])
}

// ReauthWindow is how recent a sign-in must be to enrol or remove a
// factor, regenerate recovery codes or change the password.
const ReauthWindow = 10 * time.Minute

// RecentSignIn reports whether the session signed in within ReauthWindow of now.
func RecentSignIn(s storage.Session, now time.Time) bool {
	return now.Sub(s.CreatedAt) <= ReauthWindow
}
