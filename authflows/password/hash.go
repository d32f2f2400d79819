package password

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
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/argon2"
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
	// hashWait is how long a request waits, by default, for a free hashing
	// slot before it is answered 503 (PW5): long enough for a person to
	// outwait a sign-in storm (everyone at nine in the morning) on a small
	// machine, since the queue, not more slots, absorbs it; short enough
	// that a flood is refused rather than held without end.
	hashWait = 10 * time.Second
)

// ErrBusy: every hashing slot stayed taken for hashWait.
var ErrBusy = errors.New("password hashing at capacity")

// Hasher hashes and verifies argon2id PHC strings. At most half the CPUs
// (at least one), and no more than half the Go memory limit allows, hash at
// once (see hashSlots), so memory stays bounded and a flood of sign-ins
// leaves the proxy a core. Under contention a slot also rests after each
// hash for as long as the hash worked (its time on a core by itself, at
// most its time taken), so sustained hashing uses at most half of the
// slots' cores (PW5); a lone sign-in never waits, and a queued one waits
// up to hashWait.
type Hasher struct {
	params HashParams
	slots  chan struct{}
	wait   time.Duration                         // how long to wait for a slot before ErrBusy
	dummy  string                                // a hash of nothing, verified for unknown accounts (PW4)
	rest   func(d time.Duration, release func()) // Limits.Rest
	// waiting counts requests blocked on a slot: contention.
	waiting atomic.Int32
	// runs counts argon2 computations (Hash and Verify).
	runs atomic.Int64
	// unitCost is what one KiB × pass of argon2id took when the dummy hash
	// was made (see work).
	unitCost time.Duration
}

// Runs is how many argon2 computations h has made (Hash and Verify): tests
// check with it that every sign-in path hashes exactly once (PW4) and that
// oversized passwords are never hashed (DS2).
func (h *Hasher) Runs() int64 { return h.runs.Load() }

// Waiting is how many calls wait for a free slot now.
func (h *Hasher) Waiting() int { return int(h.waiting.Load()) }

// Hold takes a hashing slot as a hash does, or returns ErrBusy, and keeps
// it until release is called: for work outside h that must count against
// the same bound (and for tests that fill the slots).
func (h *Hasher) Hold(ctx context.Context) (release func(), err error) {
	if err := h.acquire(ctx); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(h.release) }, nil
}

// Limits bound the hashing a Hasher runs at once (PW5). The zero value
// is the production setting.
type Limits struct {
	// Slots is how many hashes may run at once; 0: half the CPUs, within
	// half the Go memory limit (hashSlots).
	Slots int
	// Wait is how long a call waits for a free slot before ErrBusy; 0: 10 s,
	// negative: not at all.
	Wait time.Duration
	// Rest calls release after d without blocking; nil: time.AfterFunc.
	// Tests set it to see each rest and end it when they choose.
	Rest func(d time.Duration, release func())
}

// NewHasher returns a hasher using p for new hashes, with the production
// limits.
func NewHasher(p HashParams) *Hasher { return NewLimitedHasher(p, Limits{}) }

// NewLimitedHasher returns a hasher using p for new hashes within l.
func NewLimitedHasher(p HashParams, l Limits) *Hasher {
	if l.Slots <= 0 {
		l.Slots = hashSlots(runtime.GOMAXPROCS(0), debug.SetMemoryLimit(-1), p)
	}
	switch {
	case l.Wait == 0:
		l.Wait = hashWait
	case l.Wait < 0:
		l.Wait = 0
	}
	if l.Rest == nil {
		l.Rest = func(d time.Duration, release func()) { time.AfterFunc(d, release) }
	}
	h := &Hasher{params: p, slots: make(chan struct{}, l.Slots), wait: l.Wait, rest: l.Rest}
	start := time.Now()
	h.dummy = h.encode(make([]byte, saltLen), argon2.IDKey([]byte("gatehouse-dummy"), make([]byte, saltLen), p.Time, p.Memory, p.Threads, keyLen), p)
	h.unitCost = time.Since(start) / time.Duration(max(1, uint64(p.Memory)*uint64(p.Time)))
	return h
}

// work is how long a hash with p takes a core by itself: the cost of the
// dummy hash at start, scaled by memory × passes.
func (h *Hasher) work(p HashParams) time.Duration {
	return h.unitCost * time.Duration(uint64(p.Memory)*uint64(p.Time))
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
		// Rest as long as the hash worked, so the slot uses at most half a
		// core: its time by itself (work), not its time under load, which
		// the scheduler stretched by sharing the core with the proxy.
		h.rest(min(time.Since(start), max(h.work(p), time.Nanosecond)), h.release) // rest: others wait, the proxy gets the core
	} else {
		h.release()
	}
	return key, nil
}

// Hash returns the PHC string of password (already NFKC, see Normalize).
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
