package password

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
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
		// e + U+0301 composes into é under NFKC: 13 code points become 11.
		{"11 with decomposed é (13 code points before NFKC)", "tqmzvwxpl" + strings.Repeat("e\u0301", 2), false},
		{"12 with decomposed é", "tqmzvwxplr" + strings.Repeat("e\u0301", 2), true},
		{"11 emoji (44 bytes)", "🔑🐢🌵🎲🚲🧭🪁🍋🦉🌙🎈", false},
		{"12 emoji", "🔑🐢🌵🎲🚲🧭🪁🍋🦉🌙🎈🧩", true},
		{"only lower case letters", "lowercaseonlyletters", true},
		{"only digits", "480275913604", true},
		{"spaces inside", "a  tqmzvwxp  b", true},
		{"1024", "tqmzvwxplrkd" + strings.Repeat("q", 1012), true},
		{"1025", "tqmzvwxplrkd" + strings.Repeat("q", 1013), false},
		{"1024 three-byte characters", "tqmzvwxplrkd" + strings.Repeat("語", 1012), true},
		{"1025 three-byte characters", "tqmzvwxplrkd" + strings.Repeat("語", 1013), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(Normalize(tt.password), "someone@example.com", 12)
			if (err == nil) != tt.ok {
				t.Errorf("checkPassword = %v, want ok=%v", err, tt.ok)
			}
			var weak WeakError
			if err != nil && !errors.As(err, &weak) {
				t.Errorf("error %T, want WeakError", err)
			}
		})
	}
}

func TestCheckPasswordMinLengthSetting(t *testing.T) {
	if err := Check("abcdefghijklmnop", "a@example.com", 20); err == nil {
		t.Error("16 characters passed a minimum of 20")
	}
	if err := Check("xkcd-horse-22", "a@example.com", 8); err != nil {
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
		{"the email plus more", "jane.doe@example.com!", false},
		{"uncommon", "violet-tractor-81-dune", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(Normalize(tt.password), email, 12)
			if (err == nil) != tt.ok {
				t.Errorf("Check(%q) = %v, want ok=%v", tt.password, err, tt.ok)
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

// PW5: how many hashes run at once follows the cores and, when GOMEMLIMIT
// is set, the memory: half of it, each hash counted twice its memory.
func TestHashSlots(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name     string
		procs    int
		memLimit int64
		want     int
	}{
		{"one core", 1, math.MaxInt64, 1},
		{"two cores", 2, math.MaxInt64, 1},
		{"eight cores", 8, math.MaxInt64, 4},
		{"64 cores, no memory limit", 64, math.MaxInt64, 32},
		{"64 cores, GOMEMLIMIT=200MiB", 64, 200 * mib, 2}, // 100 MiB / 38 MiB
		{"64 cores, GOMEMLIMIT=1GiB", 64, 1024 * mib, 13},
		{"8 cores, memory to spare", 8, 4096 * mib, 4},
		{"tiny memory limit", 8, 10 * mib, 1},
	}
	for _, tt := range tests {
		if got := hashSlots(tt.procs, tt.memLimit, DefaultHashParams); got != tt.want {
			t.Errorf("%s: %d slots, want %d", tt.name, got, tt.want)
		}
	}
	h := NewHasher(testHashParams)
	if want := hashSlots(runtime.GOMAXPROCS(0), debug.SetMemoryLimit(-1), testHashParams); cap(h.slots) != want {
		t.Errorf("NewHasher: %d slots, want %d", cap(h.slots), want)
	}
}

// oneSlotHasher is a hasher with a single slot whose rests are handed to the
// test on rests instead of a timer.
type rest struct {
	d       time.Duration
	release func()
}

func oneSlotHasher(t *testing.T) (*Hasher, chan rest) {
	h := NewHasher(testHashParams)
	h.slots = make(chan struct{}, 1)
	h.wait = time.Hour // only a release, never the clock, ends a wait here
	rests := make(chan rest, 10)
	h.rest = func(d time.Duration, release func()) { rests <- rest{d, release} }
	return h, rests
}

// PW5: a lone hash never rests: its slot is free the moment it returns, so
// the next sign-in does not wait.
func TestHasherLoneHashDoesNotRest(t *testing.T) {
	h, rests := oneSlotHasher(t)
	h.wait = 0 // a taken slot would be ErrBusy at once
	phc, err := h.Hash(t.Context(), "a lone password")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if ok, _, err := h.Verify(t.Context(), phc, "a lone password"); !ok || err != nil {
			t.Fatalf("sign-in %d: %v, %v", i+1, ok, err)
		}
		if n := len(h.slots); n != 0 {
			t.Fatalf("after sign-in %d: %d slots taken, want 0", i+1, n)
		}
	}
	if n := len(rests); n != 0 {
		t.Errorf("%d rests without contention, want 0", n)
	}
}

// PW5: under contention a slot rests after a hash for as long as the hash
// took, without holding up the request that hashed; the request waiting for
// the slot gets it when the rest ends and is answered; a request that
// cannot wait is answered busy meanwhile, not held.
func TestHasherRestsUnderContention(t *testing.T) {
	h, rests := oneSlotHasher(t)
	h.slots <- struct{}{} // a hash in progress
	results := make(chan error, 2)
	for i := range 2 {
		go func() {
			_, err := h.Hash(context.Background(), fmt.Sprint("contended password ", i))
			results <- err
		}()
	}
	for h.waiting.Load() != 2 {
		runtime.Gosched()
	}
	<-h.slots // the hash in progress ends: one waiter gets the slot

	if err := receive(t, results, "the first waiter's answer"); err != nil {
		t.Fatalf("first waiter: %v", err)
	}
	if len(rests) != 1 { // the rest starts before Hash returns
		t.Fatalf("%d rests after a contended hash, want 1", len(rests))
	}
	r := <-rests
	if r.d <= 0 {
		t.Errorf("rest of %v, want the hash's duration", r.d)
	}
	if len(results) != 0 || len(h.slots) != 1 || h.waiting.Load() != 1 {
		t.Fatalf("during the rest: %d answered, %d slots taken, %d waiting; want 0, 1, 1", len(results), len(h.slots), h.waiting.Load())
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Hash(cancelled, "an impatient password"); !errors.Is(err, ErrBusy) {
		t.Fatalf("a request that cannot wait during the rest: %v, want ErrBusy", err)
	}

	r.release() // the rest ends
	if err := receive(t, results, "the second waiter's answer"); err != nil {
		t.Fatalf("second waiter: %v", err)
	}
	if len(h.slots) != 0 || len(rests) != 0 {
		t.Errorf("after the last hash: %d slots taken, %d more rests; want 0, 0 (nobody waited)", len(h.slots), len(rests))
	}
}

// receive takes the next value of c; it fails the test when nothing comes
// for a minute, a guard against a hang that no passing run comes near.
func receive[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("no %s: hung", what)
		panic("unreachable")
	}
}

// testHashParams makes argon2 cheap in tests; production cost is tested once
// (TestHashProductionParams).
var testHashParams = HashParams{Memory: 64, Time: 1, Threads: 1}

// A cancelled request gives up its wait for a slot at once.
func TestHasherBusyOnCancelledContext(t *testing.T) {
	h := NewHasher(testHashParams)
	h.wait = time.Hour
	for range cap(h.slots) {
		h.slots <- struct{}{}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := h.Hash(ctx, "whatever password"); !errors.Is(err, ErrBusy) {
		t.Errorf("Hash: %v, want ErrBusy", err)
	}
	if _, _, err := h.Verify(ctx, "", "whatever password"); !errors.Is(err, ErrBusy) {
		t.Errorf("Verify: %v, want ErrBusy", err)
	}
}
