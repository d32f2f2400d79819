package password

import (
	"errors"
	"strings"
	"testing"
)

// PW1: weak passwords the v1 rules let through are refused with a message
// that says why; strong ones still pass.
func TestCheckPasswordStrength(t *testing.T) {
	const email = "jane.doe@example.com"
	tests := []struct {
		name, password string
		ok             bool
		why            string // a piece of the message
	}{
		{"all spaces", strings.Repeat(" ", 16), false, "spaces"},
		{"all tabs and spaces", " \t \t \t \t \t \t ", false, "spaces"},
		{"one repeated letter", strings.Repeat("a", 20), false, "repeats"},
		{"one repeated emoji", strings.Repeat("🔑", 14), false, "repeats"},
		{"one repeated CJK character", strings.Repeat("語", 14), false, "repeats"},
		{"short pattern repeated", strings.Repeat("ab1", 6), false, "repeats"},
		{"email local part twice", "jane.doejane.doe", false, "email address"},
		{"email reversed pieces", "doejaneexample", false, "email address"},
		{"email with a year", "janedoe19851985", false, ""},
		{"email plus a digit", "jane.doe@example.com1", false, "email address"},
		{"app name", "gate.example.com2024", false, "email address or the name of this site"},
		{"keyboard walk", "qwertyuiopasdf", false, ""},
		{"sequence", "abcdefghijklmnop", false, ""},
		{"spaces inside one pair", "a          b", false, ""},
		{"common password not on the old list", "trustno1trustno1", false, ""},
		{"common word", "whateverwhatever", false, ""},
		{"random letters", "tqmzvwxplrkd", true, ""},
		{"unrelated words", "violet tractor dune river", true, ""},
		{"words and digits", "turnip-solstice-4817", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(Normalize(tt.password), email, 12, "gate.example.com")
			if (err == nil) != tt.ok {
				t.Fatalf("Check(%q) = %v, want ok=%v", tt.password, err, tt.ok)
			}
			if err == nil {
				return
			}
			var weak WeakError
			if !errors.As(err, &weak) {
				t.Fatalf("error %T, want WeakError", err)
			}
			if !strings.Contains(err.Error(), tt.why) {
				t.Errorf("message %q does not say %q", err, tt.why)
			}
		})
	}
}

// The estimator looks at a bounded prefix, so a 1024-character password is
// judged quickly and a strong start is enough.
func TestCheckPasswordLongInput(t *testing.T) {
	if err := Check("violet tractor dune river "+strings.Repeat("x", 998), "a@example.com", 12); err != nil {
		t.Errorf("long password with a strong start refused: %v", err)
	}
	if err := Check(strings.Repeat("x", 1000)+"violet tractor", "a@example.com", 12); err == nil {
		t.Error("long repeat with a strong tail accepted")
	}
}

// PW1: argon2 parameters read from a stored hash are bounded, so a tampered
// record cannot force a huge allocation or a long computation; the hasher
// refuses such a hash without running argon2.
func TestStoredHashParametersBounded(t *testing.T) {
	h := NewHasher(testHashParams)
	good, err := h.Hash(t.Context(), "tqmzvwxplrkd")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(good, "$")
	salt, key := parts[4], parts[5]
	with := func(params, salt, key string) string {
		return "$argon2id$v=19$" + params + "$" + salt + "$" + key
	}
	bad := map[string]string{
		"4 TiB memory":        with("m=4294967295,t=1,p=1", salt, key),
		"1 GiB memory":        with("m=1048576,t=1,p=1", salt, key),
		"a million passes":    with("m=64,t=1000000,p=1", salt, key),
		"255 threads":         with("m=4096,t=1,p=255", salt, key),
		"zero passes":         with("m=64,t=0,p=1", salt, key),
		"zero threads":        with("m=64,t=1,p=0", salt, key),
		"memory below 8*p":    with("m=8,t=1,p=4", salt, key),
		"huge output":         with("m=64,t=1,p=1", salt, strings.Repeat("A", 1<<20)),
		"short output":        with("m=64,t=1,p=1", salt, "AAAA"),
		"empty salt":          with("m=64,t=1,p=1", "", key),
		"huge salt":           with("m=64,t=1,p=1", strings.Repeat("A", 1<<16), key),
		"overflowing threads": with("m=64,t=1,p=256", salt, key),
	}
	for name, phc := range bad {
		runs := h.Runs()
		ok, _, err := h.Verify(t.Context(), phc, "tqmzvwxplrkd")
		if err == nil || ok {
			t.Errorf("%s: Verify = %v, %v; want an error", name, ok, err)
		}
		if h.Runs() != runs {
			t.Errorf("%s: argon2 ran", name)
		}
	}
	// Stronger than the default but sane: still verifies.
	strong := NewHasher(HashParams{Memory: 4096, Time: 4, Threads: 4})
	phc, err := strong.Hash(t.Context(), "tqmzvwxplrkd")
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, err := h.Verify(t.Context(), phc, "tqmzvwxplrkd"); !ok || err != nil {
		t.Errorf("m=4096,t=4,p=4 hash: %v, %v", ok, err)
	}
}
