package authflows

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// PW1: production parameters give OWASP's argon2id PHC string with a 16-byte
// random salt and a 32-byte key. The one test that pays production cost.
func TestHashProductionParams(t *testing.T) {
	h := NewHasher(DefaultHashParams)
	const password = "production cost password"
	first, err := h.Hash(t.Context(), password)
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "$argon2id$v=19$m=19456,t=2,p=1$"
	if !strings.HasPrefix(first, prefix) {
		t.Fatalf("hash %q, want prefix %q", first, prefix)
	}
	parts := strings.Split(strings.TrimPrefix(first, prefix), "$")
	if len(parts) != 2 {
		t.Fatalf("hash %q: want salt$key after the parameters", first)
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[0])
	if err != nil || len(salt) != 16 {
		t.Errorf("salt %q: %d bytes, %v; want 16", parts[0], len(salt), err)
	}
	key, err := base64.RawStdEncoding.DecodeString(parts[1])
	if err != nil || len(key) != 32 {
		t.Errorf("key %q: %d bytes, %v; want 32", parts[1], len(key), err)
	}
	second, err := h.Hash(t.Context(), password)
	if err != nil {
		t.Fatal(err)
	}
	if second == first {
		t.Error("two hashes of one password are equal: salt not random")
	}
	ok, rehash, err := h.Verify(t.Context(), first, password)
	if !ok || rehash || err != nil {
		t.Errorf("Verify = %v, %v, %v; want true, false, nil", ok, rehash, err)
	}
}

func TestVerify(t *testing.T) {
	ctx := t.Context()
	current := NewHasher(testHashParams)
	weaker := NewHasher(HashParams{Memory: 32, Time: 1, Threads: 1})
	good, _ := current.Hash(ctx, "the right password")
	old, _ := weaker.Hash(ctx, "the right password")
	tests := []struct {
		name, phc, password string
		ok, rehash, err     bool
	}{
		{"right", good, "the right password", true, false, false},
		{"wrong", good, "the wrong password", false, false, false},
		{"case matters", good, "The Right Password", false, false, false},
		{"prefix", good, "the right passwor", false, false, false},
		{"old parameters", old, "the right password", true, true, false},
		{"old parameters, wrong", old, "the wrong password", false, false, false},
		{"no password set", "", "", false, false, false},
		{"no password set, any input", "", "gatehouse-dummy", false, false, false},
		{"not a PHC string", "plaintext", "plaintext", false, false, true},
		{"bcrypt", "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy", "x", false, false, true},
		{"other argon2 version", strings.Replace(good, "v=19", "v=16", 1), "the right password", false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, rehash, err := current.Verify(ctx, tt.phc, tt.password)
			if ok != tt.ok || rehash != tt.rehash || (err != nil) != tt.err {
				t.Errorf("Verify = %v, %v, %v; want %v, %v, error %v", ok, rehash, err, tt.ok, tt.rehash, tt.err)
			}
		})
	}
}

// PW2: length in code points after NFKC, 12 (the default) to 1024, no
// composition rules.
func TestCheckPasswordLength(t *testing.T) {
	tests := []struct {
		name, password string
		ok             bool
	}{
		{"11 ASCII", "tqmzvwxplrk", false},
		{"12 ASCII", "tqmzvwxplrkd", true},
		{"12 fullwidth (36 bytes)", "ＴＱＭＺＶＷＸＰＬＲＫＤ", true},
		{"11 fullwidth (33 bytes)", "ＴＱＭＺＶＷＸＰＬＲＫ", false},
		// e + U+0301 composes into é under NFKC: 22 code points become 11.
		{"11 decomposed é (22 code points before NFKC)", strings.Repeat("e\u0301", 11), false},
		{"12 decomposed é", strings.Repeat("e\u0301", 12), true},
		{"11 emoji (44 bytes)", strings.Repeat("🔑", 11), false},
		{"12 emoji", strings.Repeat("🔑", 12), true},
		{"only lower case letters", "lowercaseonlyletters", true},
		{"only digits", "480275913604", true},
		{"only spaces inside", "a          b", true},
		{"1024", strings.Repeat("q", 1024), true},
		{"1025", strings.Repeat("q", 1025), false},
		{"1024 three-byte characters", strings.Repeat("語", 1024), true},
		{"1025 three-byte characters", strings.Repeat("語", 1025), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkPassword(normalizePassword(tt.password), "someone@example.com", 12)
			if (err == nil) != tt.ok {
				t.Errorf("checkPassword = %v, want ok=%v", err, tt.ok)
			}
			var weak weakPassword
			if err != nil && !errors.As(err, &weak) {
				t.Errorf("error %T, want weakPassword", err)
			}
		})
	}
}

func TestCheckPasswordMinLengthSetting(t *testing.T) {
	if err := checkPassword("abcdefghijklmnop", "a@example.com", 20); err == nil {
		t.Error("16 characters passed a minimum of 20")
	}
	if err := checkPassword("xkcd-horse-22", "a@example.com", 8); err != nil {
		t.Errorf("13 characters refused with a minimum of 8: %v", err)
	}
}

// PW3: common passwords in any case or width, and the account's email, are
// refused.
func TestCheckPasswordCommonAndEmail(t *testing.T) {
	const email = "jane.doe@example.com"
	tests := []struct {
		name, password string
		ok             bool
	}{
		{"listed", "password1234", false},
		{"listed, upper case", "PASSWORD1234", false},
		{"listed, mixed case", "PassWord1234", false},
		{"listed, fullwidth", "ｐａｓｓｗｏｒｄ１２３４", false},
		{"keyboard walk", "qwertyuiop123", false},
		{"digits", "123456789012", false},
		{"phrase", "iloveyou123456", false},
		{"xkcd", "CorrectHorseBatteryStaple", false},
		{"the email", email, false},
		{"the email, other case", "Jane.Doe@Example.com", false},
		{"the email with spaces", "  jane.doe@example.com ", false},
		{"the email, fullwidth", "ｊａｎｅ.ｄｏｅ@ｅｘａｍｐｌｅ.ｃｏｍ", false},
		{"listed plus a word", "password1234 turnip", true},
		{"the email plus more", "jane.doe@example.com!", true},
		{"uncommon", "violet-tractor-81-dune", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkPassword(normalizePassword(tt.password), email, 12)
			if (err == nil) != tt.ok {
				t.Errorf("checkPassword(%q) = %v, want ok=%v", tt.password, err, tt.ok)
			}
		})
	}
}

// The list is real: several hundred distinct entries of at least 8
// characters, each of which is refused in any case.
func TestCommonPasswordList(t *testing.T) {
	seen := map[string]bool{}
	for line := range strings.Lines(commonPasswordList) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if n := len([]rune(line)); n < 8 {
			t.Errorf("%q: %d characters, want at least 8", line, n)
		}
		key := commonPasswordKey(line)
		if seen[key] {
			t.Errorf("%q listed twice", line)
		}
		seen[key] = true
		if !isCommonPassword(line) || !isCommonPassword(strings.ToUpper(line)) {
			t.Errorf("%q not recognised", line)
		}
	}
	if len(seen) < 300 {
		t.Errorf("%d entries, want several hundred", len(seen))
	}
	for _, p := range []string{"", "zebra-lantern-monsoon", "password 1234"} {
		if isCommonPassword(p) {
			t.Errorf("%q reported common", p)
		}
	}
}
