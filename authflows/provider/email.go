package provider

import (
	"github.com/gatehouse-auth/gatehouse/storage"
)

// validProviderEmail checks an email address a provider vouches for before
// it is stored or sent upstream in X-Forwarded-Email (EM1), and returns it
// normalized: one plain address (storage.ValidAddress), anything else is
// treated as no email.
func validProviderEmail(raw string) (string, bool) {
	if !storage.ValidAddress(raw) {
		return "", false
	}
	return storage.NormalizeEmail(raw), true
}
