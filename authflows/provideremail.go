package authflows

import (
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gatehouse-auth/gatehouse/proxy/policy"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// validProviderEmail checks an email address a provider vouches for before
// it is stored or sent upstream in X-Forwarded-Email (EM1), and returns it
// normalized. A provider's string is accepted only as one plain address:
// net/mail parses it with no display name, comment or angle brackets, it
// is valid UTF-8 of printable characters without spaces, and it holds none
// of the characters that would let one value read as several (a comma, a
// semicolon, quotes, a backslash). Anything else is treated as no email.
func validProviderEmail(raw string) (string, bool) {
	if raw == "" || len(raw) > 254 || !utf8.ValidString(raw) {
		return "", false
	}
	for _, r := range raw {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) || strings.ContainsRune(`,;"\<>()[]`, r) {
			return "", false
		}
	}
	if strings.Count(raw, "@") != 1 {
		return "", false
	}
	addr, err := mail.ParseAddress(raw)
	if err != nil || addr.Name != "" || addr.Address != raw || !policy.PlainAddress(raw) {
		return "", false
	}
	return storage.NormalizeEmail(raw), true
}
