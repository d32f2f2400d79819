package password

import "context"

// NewHash applies the password rules (PW2, PW3) to password for the
// account email and returns its argon2id PHC string. It is for setting a
// password outside a request, as `gatehouse users add` does; a rejected
// password's error says why in a sentence. appNames (the app's name) are
// context for the strength estimate (PW1), like the email.
func NewHash(ctx context.Context, p HashParams, password, email string, minLen int, appNames ...string) (string, error) {
	password = Normalize(password)
	if err := Check(password, email, minLen, appNames...); err != nil {
		return "", err
	}
	return NewHasher(p).Hash(ctx, password)
}
