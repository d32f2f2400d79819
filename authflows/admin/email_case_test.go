package admin

import "testing"

// CheckEmail takes an address with capitals, ASCII or not, as the address
// it stores: storage.PlainAddress refuses a non-ASCII capital in the local
// part (it is meant for addresses compared lower-cased), so the check runs
// on the normalized form, "élodie@example.fr" for "Élodie@example.fr".
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
