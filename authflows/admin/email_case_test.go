package admin

import "testing"

// Review of 8b56c8c: CheckEmail now runs storage.ValidAddress on the
// address as typed, before storage.NormalizeEmail lower-cases it. The
// PlainAddress part of it refuses a non-ASCII capital in the local part
// (it is meant for addresses compared lower-cased), so `users add` refuses
// "Élodie@example.fr" as "not a plain email address" while it takes
// "Alice@example.com" (an ASCII capital) and "élodie@example.fr", the very
// address it would store. Before 8b56c8c (net/mail only) it was taken.
// Checking the normalized form keeps every refusal of
// TestCheckEmailRefusesWhatEM1Refuses.
func TestCheckEmailTakesNonASCIICapitals(t *testing.T) {
	for email, want := range map[string]string{
		"Alice@example.com":  "alice@example.com",
		"élodie@example.fr":  "élodie@example.fr",
		"Élodie@example.fr":  "élodie@example.fr",
		"ZOË.MÜLLER@corp.de": "zoë.müller@corp.de",
	} {
		got, err := CheckEmail(email)
		if err != nil || got != want {
			t.Errorf("CheckEmail(%q) = %q, %v; want %q", email, got, err, want)
		}
	}
}
