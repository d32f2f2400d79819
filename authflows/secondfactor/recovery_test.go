package secondfactor

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/storage"
)

func TestNewRecoveryCodes(t *testing.T) {
	codes, hashes := NewRecoveryCodes()
	if len(codes) != RecoveryCodeCount || len(hashes) != RecoveryCodeCount {
		t.Fatalf("%d codes, %d hashes; want %d", len(codes), len(hashes), RecoveryCodeCount)
	}
	shape := regexp.MustCompile(`^[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}$`)
	seen := map[string]bool{}
	for i, code := range codes {
		if !shape.MatchString(code) {
			t.Errorf("code %q is not xxxx-xxxx-xxxx-xxxx in base32", code)
		}
		if seen[code] {
			t.Errorf("code %q twice", code)
		}
		seen[code] = true
		if h, err := RecoveryCodeHash(code); err != nil || h != hashes[i] {
			t.Errorf("RecoveryCodeHash(%q): %v; not the stored hash", code, err)
		}
	}
}

func TestRecoveryCodeHashNormalises(t *testing.T) {
	const code = "k7qm-2xa4-bb3c-zz6d"
	want, err := RecoveryCodeHash(code)
	if err != nil {
		t.Fatal(err)
	}
	for _, same := range []string{"K7QM-2XA4-BB3C-ZZ6D", "k7qm2xa4bb3czz6d", "k7qm 2xa4 bb3c zz6d", " k7qm-2xa4\nbb3c-zz6d\r\n", "K7qm-2xA4-bB3c-Zz6D"} {
		if got, err := RecoveryCodeHash(same); err != nil || got != want {
			t.Errorf("RecoveryCodeHash(%q): %v; not the same code as %q", same, err, code)
		}
	}
	for _, bad := range []string{
		"", "k7qm-2xa4-bb3c", "k7qm-2xa4-bb3c-zz6d-a", "k7qm-2xa4-bb3c-zz6!", "k7qm-2xa4-bb3c-zz61", // 1 is not base32
		"k7qm-2xa4-bb3c-zz6ä", strings.Repeat("-", 60) + "k7qm2xa4bb3czz6d",
	} {
		if _, err := RecoveryCodeHash(bad); !errors.Is(err, ErrRecoveryCodeFormat) {
			t.Errorf("RecoveryCodeHash(%q): %v, want ErrRecoveryCodeFormat", bad, err)
		}
	}
}

func TestUseRecoveryCode(t *testing.T) {
	s := newStore(t)
	c := newClock()
	f := New(s, Config{Issuer: "Acme", Now: c.Now})
	u, _, codes := enrolled(t, s, f, c, "ada")
	other, _, theirs := enrolled(t, s, f, c, "bob")

	left, err := f.UseRecoveryCode(t.Context(), u.ID, strings.ToUpper(codes[0]))
	if err != nil || left != RecoveryCodeCount-1 {
		t.Fatalf("UseRecoveryCode: %d left, %v", left, err)
	}
	for _, bad := range []struct {
		name, code string
		want       error
	}{
		{"the same code again", codes[0], ErrInvalidRecoveryCode},
		{"another user's code", theirs[0], ErrInvalidRecoveryCode},
		{"not a code", "hello", ErrRecoveryCodeFormat},
	} {
		if _, err := f.UseRecoveryCode(t.Context(), u.ID, bad.code); !errors.Is(err, bad.want) {
			t.Errorf("UseRecoveryCode(%s): %v, want %v", bad.name, err, bad.want)
		}
	}
	if _, err := f.UseRecoveryCode(t.Context(), other.ID, theirs[0]); err != nil {
		t.Fatalf("the other user's own code: %v", err)
	}

	// Regenerating voids every old code at once.
	fresh, err := f.RegenerateRecoveryCodes(t.Context(), u.ID)
	if err != nil || len(fresh) != RecoveryCodeCount {
		t.Fatalf("RegenerateRecoveryCodes: %d, %v", len(fresh), err)
	}
	if _, err := f.UseRecoveryCode(t.Context(), u.ID, codes[1]); !errors.Is(err, ErrInvalidRecoveryCode) {
		t.Fatalf("an old code after regenerating: %v, want ErrInvalidRecoveryCode", err)
	}
	if _, err := f.UseRecoveryCode(t.Context(), u.ID, fresh[9]); err != nil {
		t.Fatalf("a new code: %v", err)
	}
	plain := newUser(t, s, "carol")
	if _, err := f.RegenerateRecoveryCodes(t.Context(), plain.ID); !errors.Is(err, ErrNoSecondFactor) {
		t.Fatalf("RegenerateRecoveryCodes without a factor: %v, want ErrNoSecondFactor", err)
	}
}

// The same recovery code twice at once: accepted once.
func TestUseRecoveryCodeConcurrent(t *testing.T) {
	s := newStore(t)
	c := newClock()
	f := New(s, Config{Issuer: "Acme", Now: c.Now})
	u, _, codes := enrolled(t, s, f, c, "ada")
	for _, code := range codes[:3] {
		won := 0
		for _, err := range concurrently(2, func() error { _, err := f.UseRecoveryCode(t.Context(), u.ID, code); return err }) {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, ErrInvalidRecoveryCode):
				t.Fatalf("the loser: %v", err)
			}
		}
		if won != 1 {
			t.Fatalf("%d of 2 concurrent uses of one code succeeded, want 1", won)
		}
	}
}

func TestMethods(t *testing.T) {
	confirmed := storage.TOTPFactor{Confirmed: true}
	pending := storage.TOTPFactor{}
	for _, c := range []struct {
		name    string
		factors storage.SecondFactors
		want    string
	}{
		{"none", storage.SecondFactors{}, ""},
		{"pending only", storage.SecondFactors{TOTP: []storage.TOTPFactor{pending}}, ""},
		{"codes without a factor", storage.SecondFactors{RecoveryCodesLeft: 3}, ""},
		{"totp", storage.SecondFactors{TOTP: []storage.TOTPFactor{confirmed, confirmed}, RecoveryCodesLeft: 10}, "totp,recovery_code"},
		{"no codes left", storage.SecondFactors{TOTP: []storage.TOTPFactor{confirmed}}, "totp"},
		{"passkey", storage.SecondFactors{Passkeys: []storage.Passkey{{}}, RecoveryCodesLeft: 1}, "passkey,recovery_code"},
		{"both", storage.SecondFactors{TOTP: []storage.TOTPFactor{pending, confirmed}, Passkeys: []storage.Passkey{{}}}, "totp,passkey"},
	} {
		if got := strings.Join(Methods(c.factors), ","); got != c.want {
			t.Errorf("Methods(%s) = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestFactorName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Phone", "Phone"},
		{"  My \t phone\n ", "My phone"},
		{"", "Fallback"},
		{" \t\x00\x1b ", "Fallback"},
		{"a\x00b", "a b"},
		{strings.Repeat("é", 100), strings.Repeat("é", maxNameRunes)},
		{strings.Repeat("ab ", 40), strings.Repeat("ab ", 22)[:maxNameRunes]}, // cut at 64, "…ab a"
	} {
		if got := FactorName(c.in, "Fallback"); got != c.want {
			t.Errorf("FactorName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
