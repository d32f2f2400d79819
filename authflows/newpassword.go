package authflows

import "context"

// NewPasswordHash applies the password rules (PW2, PW3) to password for the
// account email and returns its argon2id PHC string. It is for setting a
// password outside a request, as `gatehouse users add` does; a rejected
// password's error says why in a sentence.
func NewPasswordHash(ctx context.Context, p HashParams, password, email string, minLen int) (string, error) {
	password = normalizePassword(password)
	if err := checkPassword(password, email, minLen); err != nil {
		return "", err
	}
	return NewHasher(p).Hash(ctx, password)
}
