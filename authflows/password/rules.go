package password

import (
	"fmt"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// MaxLength bounds a password in code points (PW2, DS2).
const MaxLength = 1024

// Normalize is the one form in which passwords are measured and hashed: NFKC.
func Normalize(password string) string { return norm.NFKC.String(password) }

// WeakError says why a password is refused; the message is shown to the user.
type WeakError struct{ reason string }

func (w WeakError) Error() string { return w.reason }

// Check applies the password rules to an NFKC-normalized password
// (PW2, PW3, PW1): minLen to MaxLength code points, not the
// account's email, not a common password, and hard enough to guess by
// zxcvbn's estimate with the email and appNames (the app's name) as context.
// No composition rules. A refusal is a WeakError.
func Check(password, email string, minLen int, appNames ...string) error {
	n := 0
	for range password {
		n++
	}
	switch {
	case n < minLen:
		return WeakError{fmt.Sprintf("Use at least %d characters.", minLen)}
	case n > MaxLength:
		return WeakError{fmt.Sprintf("Use at most %d characters.", MaxLength)}
	case strings.EqualFold(strings.TrimSpace(password), strings.TrimSpace(email)):
		return WeakError{"Your password must not be your email address."}
	case isCommonPassword(password):
		return WeakError{"This password is too common; choose another."}
	}
	if reason := weakReason(password, email, appNames); reason != "" {
		return WeakError{reason}
	}
	return nil
}
