package authflows

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/argon2"
	"golang.org/x/text/unicode/norm"
)

// HashParams is the argon2id cost.
type HashParams struct {
	Memory  uint32 // KiB
	Time    uint32 // passes
	Threads uint8
}

// weakerThan reports whether p costs less than q in memory or passes and
// more in neither: such hashes are upgraded at the next sign-in (PW1). One
// that is stronger in either is kept, so an upgrade never lowers the memory
// or the passes of a stored hash (m=65536,t=1 is no weaker than OWASP's
// m=19456,t=2).
func (p HashParams) weakerThan(q HashParams) bool {
	return p.Memory <= q.Memory && p.Time <= q.Time && (p.Memory < q.Memory || p.Time < q.Time)
}

// DefaultHashParams are OWASP's argon2id parameters (PW1).
var DefaultHashParams = HashParams{Memory: 19456, Time: 2, Threads: 1}

const (
	saltLen = 16
	keyLen  = 32
	// MaxPasswordLength bounds a password in code points (PW2, DS2).
	MaxPasswordLength = 1024
	// hashWait is how long a request waits, by default, for a free hashing
	// slot before it is answered 503 (PW5).
	hashWait = 2 * time.Second
)

// ErrBusy: every hashing slot stayed taken for hashWait.
var ErrBusy = errors.New("password hashing at capacity")

// Hasher hashes and verifies argon2id PHC strings. At most half the CPUs
// (at least one), and no more than half the Go memory limit allows, hash at
// once (see hashSlots), so memory stays bounded and a flood of sign-ins
// leaves the proxy a core. Under contention a slot also rests after each
// hash for as long as the hash took, so sustained hashing uses at most half
// of the slots' cores (PW5); a lone sign-in never waits.
type Hasher struct {
	params HashParams
	slots  chan struct{}
	wait   time.Duration // how long to wait for a slot before ErrBusy
	dummy  string        // a hash of nothing, verified for unknown accounts (PW4)
	// rest calls release after d, without blocking: time.AfterFunc. Tests
	// replace it to see the rest and end it when they choose.
	rest func(d time.Duration, release func())
	// waiting counts requests blocked on a slot: contention.
	waiting atomic.Int32
	// runs counts argon2 computations (Hash and Verify). Tests use it to
	// check that every login path hashes exactly once (PW4) and that
	// oversized passwords are never hashed (DS2).
	runs atomic.Int64
}

// NewHasher returns a hasher using p for new hashes.
func NewHasher(p HashParams) *Hasher {
	h := &Hasher{
		params: p,
		slots:  make(chan struct{}, hashSlots(runtime.GOMAXPROCS(0), debug.SetMemoryLimit(-1), p)),
		wait:   hashWait,
		rest:   func(d time.Duration, release func()) { time.AfterFunc(d, release) },
	}
	h.dummy = h.encode(make([]byte, saltLen), argon2.IDKey([]byte("gatehouse-dummy"), make([]byte, saltLen), p.Time, p.Memory, p.Threads, keyLen), p)
	return h
}

// hashSlots is how many hashes may run at once: half of procs (at least
// one), and, when the Go memory limit memLimit is set (GOMEMLIMIT, else
// math.MaxInt64), no more than fit in half of it, each hash counted twice
// its memory since a finished hash's memory stays garbage until the next
// collection. Always at least one.
func hashSlots(procs int, memLimit int64, p HashParams) int {
	n := max(1, procs/2)
	if memLimit > 0 && memLimit < math.MaxInt64 && p.Memory > 0 {
		perHash := 2 * int64(p.Memory) * 1024
		n = min(n, max(1, int(memLimit/2/perHash)))
	}
	return n
}

func (h *Hasher) acquire(ctx context.Context) error {
	select {
	case h.slots <- struct{}{}:
		return nil
	default:
	}
	h.waiting.Add(1)
	defer h.waiting.Add(-1)
	ctx, cancel := context.WithTimeout(ctx, h.wait)
	defer cancel()
	select {
	case h.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ErrBusy
	}
}

func (h *Hasher) release() { <-h.slots }

// idKey computes argon2id behind a slot, or returns ErrBusy.
func (h *Hasher) idKey(ctx context.Context, password string, salt []byte, p HashParams, size uint32) ([]byte, error) {
	if err := h.acquire(ctx); err != nil {
		return nil, err
	}
	h.runs.Add(1)
	start := time.Now()
	key := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, size)
	if h.waiting.Load() > 0 {
		h.rest(time.Since(start), h.release) // rest: others wait, the proxy gets the core
	} else {
		h.release()
	}
	return key, nil
}

// Hash returns the PHC string of password (already NFKC, see normalizePassword).
func (h *Hasher) Hash(ctx context.Context, password string) (string, error) {
	salt := make([]byte, saltLen)
	_, _ = rand.Read(salt)
	p := h.params
	key, err := h.idKey(ctx, password, salt, p, keyLen)
	if err != nil {
		return "", err
	}
	return h.encode(salt, key, p), nil
}

// Verify compares password with a PHC string in constant time. An empty phc
// (no password set) is verified against a dummy hash so that the answer takes
// as long as a real one and is false. needsRehash is true when phc used weaker
// parameters than the current ones.
func (h *Hasher) Verify(ctx context.Context, phc, password string) (ok, needsRehash bool, err error) {
	real := phc != ""
	if !real {
		phc = h.dummy
	}
	p, salt, want, err := decodePHC(phc)
	if err != nil {
		return false, false, err
	}
	got, err := h.idKey(ctx, password, salt, p, uint32(len(want)))
	if err != nil {
		return false, false, err
	}
	ok = subtle.ConstantTimeCompare(got, want) == 1 && real
	return ok, ok && p.weakerThan(h.params), nil
}

func (h *Hasher) encode(salt, key []byte, p HashParams) string {
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.Memory, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// decodePHC parses "$argon2id$v=19$m=…,t=…,p=…$salt$hash".
func decodePHC(phc string) (p HashParams, salt, key []byte, err error) {
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return p, nil, nil, errors.New("not an argon2id PHC string")
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return p, nil, nil, errors.New("unsupported argon2 version")
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil {
		return p, nil, nil, errors.New("bad argon2 parameters")
	}
	b64 := base64.RawStdEncoding
	if salt, err = b64.DecodeString(parts[4]); err != nil {
		return p, nil, nil, errors.New("bad argon2 salt")
	}
	if key, err = b64.DecodeString(parts[5]); err != nil || len(key) == 0 {
		return p, nil, nil, errors.New("bad argon2 hash")
	}
	if err := checkStoredParams(p, len(salt), len(key)); err != nil {
		return p, nil, nil, err
	}
	return p, salt, key, nil
}

// Bounds on what a stored hash may ask of Verify (PW1): a tampered or
// corrupt record cannot make a sign-in allocate gigabytes, spin for minutes
// or start a thousand goroutines. They are far above any sane cost (OWASP's
// is m=19456, t=2, p=1), so hashes made with a stronger setting still verify.
const (
	maxHashMemory  = 1 << 18 // KiB: 256 MiB
	maxHashTime    = 16
	maxHashThreads = 16
	minSaltLen     = 8
	maxSaltLen     = 64
	minKeyLen      = 16
	maxKeyLen      = 64
)

// checkStoredParams refuses argon2 parameters outside those bounds.
func checkStoredParams(p HashParams, saltLen, keyLen int) error {
	switch {
	case p.Memory == 0 || p.Memory > maxHashMemory,
		p.Time == 0 || p.Time > maxHashTime,
		p.Threads == 0 || p.Threads > maxHashThreads,
		p.Memory < 8*uint32(p.Threads):
		return fmt.Errorf("argon2 parameters m=%d,t=%d,p=%d out of bounds", p.Memory, p.Time, p.Threads)
	case saltLen < minSaltLen || saltLen > maxSaltLen:
		return fmt.Errorf("argon2 salt of %d bytes out of bounds", saltLen)
	case keyLen < minKeyLen || keyLen > maxKeyLen:
		return fmt.Errorf("argon2 hash of %d bytes out of bounds", keyLen)
	}
	return nil
}

// normalizePassword is the one form in which passwords are measured and hashed: NFKC.
func normalizePassword(password string) string { return norm.NFKC.String(password) }

// weakPassword says why a password is refused; the message is shown to the user.
type weakPassword struct{ reason string }

func (w weakPassword) Error() string { return w.reason }

// checkPassword applies the password rules to an NFKC-normalized password
// (PW2, PW3, PW1): minLen to MaxPasswordLength code points, not the
// account's email, not a common password, and hard enough to guess by
// zxcvbn's estimate with the email and appNames (the app's name) as context.
// No composition rules.
func checkPassword(password, email string, minLen int, appNames ...string) error {
	n := 0
	for range password {
		n++
	}
	switch {
	case n < minLen:
		return weakPassword{fmt.Sprintf("Use at least %d characters.", minLen)}
	case n > MaxPasswordLength:
		return weakPassword{fmt.Sprintf("Use at most %d characters.", MaxPasswordLength)}
	case strings.EqualFold(strings.TrimSpace(password), strings.TrimSpace(email)):
		return weakPassword{"Your password must not be your email address."}
	case isCommonPassword(password):
		return weakPassword{"This password is too common; choose another."}
	}
	if reason := weakReason(password, email, appNames); reason != "" {
		return weakPassword{reason}
	}
	return nil
}
