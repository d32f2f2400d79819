package admin

import (
	"strings"
	"testing"
)

// Every account's email reaches the upstream in X-Forwarded-Email, the
// identity assertion and the audit trail. For addresses from providers EM1
// allows only one plain, printable address of at most 254 bytes
// (authflows.validProviderEmail); the admin API, the other way an account
// gets an email, only asks net/mail, which takes invisible and
// bidirectional-control characters, IP-literal domains and any length. An
// account "admin\u200b@corp.com" looks like admin@corp.com in `users list`,
// in the audit trail and to an upstream that strips format characters.
func TestCheckEmailRefusesWhatEM1Refuses(t *testing.T) {
	for _, email := range []string{
		"admin\u200b@example.com",       // zero-width space
		"ann\u202emoc.elpmaxe@corp.com", // right-to-left override
		"ann@exam\u00adple.com",         // soft hyphen
		"ann@[127.0.0.1]",               // domain literal
		strings.Repeat("a", 300) + "@example.com",
	} {
		if got, err := CheckEmail(email); err == nil {
			t.Errorf("CheckEmail(%q) = %q, want a refusal", email, got)
		}
	}
}
