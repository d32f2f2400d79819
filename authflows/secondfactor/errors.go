package secondfactor

import (
	"errors"
	"fmt"
)

// Errors the flows map to answers; test them with errors.Is. Each more
// specific error also matches the general one it is listed under.
var (
	// ErrCodeFormat: the input is not a code at all (a TOTP code is exactly
	// six ASCII digits, no spaces or letters). Nothing was checked or stored.
	ErrCodeFormat = errors.New("secondfactor: a code is 6 digits")
	// ErrInvalidCode: the code is not one of the user's valid codes.
	ErrInvalidCode = errors.New("secondfactor: invalid code")
	// ErrCodeReused: the code was right but its time step was already
	// accepted for the user (each step counts once): wait for the next code.
	ErrCodeReused = fmt.Errorf("%w: already used, wait for the next code", ErrInvalidCode)
	// ErrNoPendingFactor: no TOTP enrolment of the user with that id is in
	// progress (never started, confirmed already, or lapsed): start again.
	ErrNoPendingFactor = errors.New("secondfactor: no such TOTP enrolment in progress")

	// ErrRecoveryCodeFormat: the input is not shaped like a recovery code.
	ErrRecoveryCodeFormat = errors.New("secondfactor: a recovery code is 16 letters and digits")
	// ErrInvalidRecoveryCode: not one of the user's unused recovery codes.
	ErrInvalidRecoveryCode = errors.New("secondfactor: invalid or used recovery code")

	// ErrStepExpired: the second-factor step is unknown to this browser,
	// used, or older than its lifetime: sign in again.
	ErrStepExpired = errors.New("secondfactor: second-factor step expired or unknown")

	// ErrInvalidCredential: a WebAuthn response was refused. The more
	// specific errors below match it too.
	ErrInvalidCredential = errors.New("secondfactor: invalid credential")
	// ErrCeremonyNotFound: no ceremony for this browser: never begun here,
	// finished already (a challenge is used once), or expired.
	ErrCeremonyNotFound = fmt.Errorf("%w: no ceremony in progress for this browser", ErrInvalidCredential)
	// ErrTooLarge: the WebAuthn response is larger than MaxCredentialJSON.
	ErrTooLarge = fmt.Errorf("%w: response too large", ErrInvalidCredential)
	// ErrPossibleClone: the authenticator's signature counter did not
	// grow: the credential may have been copied. Worth a warning in the log.
	ErrPossibleClone = fmt.Errorf("%w: signature counter did not increase (cloned authenticator?)", ErrInvalidCredential)
	// ErrPasskeyRegistered: the authenticator's credential is registered already.
	ErrPasskeyRegistered = fmt.Errorf("%w: this passkey is registered already", ErrInvalidCredential)
	// ErrNoPasskey: the user has no passkey to sign in with.
	ErrNoPasskey = errors.New("secondfactor: the user has no passkey")

	// ErrNoSecondFactor: recovery codes need a second factor to recover.
	ErrNoSecondFactor = errors.New("secondfactor: the user has no second factor")
)
