package secondfactor

import (
	"crypto/rand"
	"encoding/base64"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// A binding is the random value a cookie carries to tie a record (a
// second-factor step, a WebAuthn ceremony) to the browser that began it;
// the store keeps only its hash.

// maxBindingLen bounds a binding value read from a cookie: anything longer
// is not one of ours and is not hashed.
const maxBindingLen = 128

// newBinding returns 256 random bits, URL-safe base64 without padding.
func newBinding() (string, storage.Hash) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	value := base64.RawURLEncoding.EncodeToString(b[:])
	return value, storage.HashSecret(value)
}

// bindingHash returns the hash of a binding value from a cookie, or false
// for a value that cannot be one.
func bindingHash(value string) (storage.Hash, bool) {
	if value == "" || len(value) > maxBindingLen {
		return storage.Hash{}, false
	}
	return storage.HashSecret(value), true
}
