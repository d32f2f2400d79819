package secondfactor

import (
	"crypto/rand"
	"encoding/base32"
	"strings"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// Recovery codes: RecoveryCodeCount single-use codes, each 80 random bits
// written as 16 base32 characters in four groups ("k7qm-2xa4-…"), shown
// once and stored only as SHA-256 digests. The store finds a code by its
// digest, so no comparison ever runs over a stored code's bytes.
const (
	RecoveryCodeCount = 10
	recoveryCodeBytes = 10 // 80 bits: 16 base32 characters
	recoveryCodeChars = 16
	recoveryGroup     = 4
	// maxRecoveryInput bounds the input examined: a code with generous
	// separators fits, a pasted page does not.
	maxRecoveryInput = 64
)

// NewRecoveryCodes returns RecoveryCodeCount new codes as the user sees
// them, and their digests as the store keeps them.
func NewRecoveryCodes() (codes []string, hashes []storage.Hash) {
	codes = make([]string, RecoveryCodeCount)
	hashes = make([]storage.Hash, RecoveryCodeCount)
	for i := range codes {
		var raw [recoveryCodeBytes]byte
		_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails
		plain := base32.StdEncoding.EncodeToString(raw[:])
		hashes[i] = storage.HashSecret(plain)
		var b strings.Builder
		for j := 0; j < len(plain); j += recoveryGroup {
			if j > 0 {
				b.WriteByte('-')
			}
			b.WriteString(strings.ToLower(plain[j : j+recoveryGroup]))
		}
		codes[i] = b.String()
	}
	return codes, hashes
}

// RecoveryCodeHash returns the digest of a recovery code as typed: case
// does not matter, and spaces and hyphens (the grouping, line breaks of a
// paste) are ignored. Anything else that is not a base32 character, or a
// code of another length, is ErrRecoveryCodeFormat.
func RecoveryCodeHash(input string) (storage.Hash, error) {
	if len(input) > maxRecoveryInput {
		return storage.Hash{}, ErrRecoveryCodeFormat
	}
	var plain [recoveryCodeChars]byte
	n := 0
	for i := range len(input) {
		c := input[i]
		switch {
		case c == '-' || c == ' ' || c == '\t' || c == '\r' || c == '\n':
			continue
		case c >= 'a' && c <= 'z':
			c -= 'a' - 'A'
		case c >= 'A' && c <= 'Z', c >= '2' && c <= '7':
		default:
			return storage.Hash{}, ErrRecoveryCodeFormat
		}
		if n == recoveryCodeChars {
			return storage.Hash{}, ErrRecoveryCodeFormat
		}
		plain[n] = c
		n++
	}
	if n != recoveryCodeChars {
		return storage.Hash{}, ErrRecoveryCodeFormat
	}
	return storage.HashSecret(string(plain[:])), nil
}
