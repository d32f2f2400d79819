// Package bolt is the single-file storage backend of Gatehouse: it implements
// storage.Store on a bbolt database and owns the file's layout (buckets, key
// formats, record encodings) and its lock.
//
// Dependencies: bolt imports storage and go.etcd.io/bbolt only. No bbolt type
// (DB, Tx, Bucket, Cursor) and no byte slice read inside a transaction leaves
// this package; records are decoded, and their bytes copied, inside the
// View/Update closure that read them.
//
// Every method is one bbolt transaction, so it is atomic on its own. The one
// exception is a sweep (DeleteExpired*), which deletes in chunks of at most
// sweepChunk records per transaction so that a large sweep never holds the
// writer lock for long; each chunk is atomic and keeps every index consistent.
// QueueResetRequest runs through bbolt's Batch, so concurrent calls may share
// one transaction; each call's work is still all or nothing. Session, the
// per-request read, is answered from memory while no write has happened
// since the record was read (sessioncache.go): exact, as SS3 requires; so
// is APITokenByHash (apitokencache.go).
package bolt

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Buckets. Keys are fixed-width or length-prefixed so that prefix scans
// (Seek + bytes.HasPrefix) never match a longer neighbour; see keys.go.
var (
	bucketUsers          = []byte("users")              // user id → user
	bucketUsersByEmail   = []byte("users_by_email")     // normalized email → user id
	bucketIdentities     = []byte("identities")         // provider 0x00 subject → identity
	bucketUserIdentities = []byte("user_identities")    // user prefix + provider → subject
	bucketSessions       = []byte("sessions")           // id hash → session
	bucketUserSessions   = []byte("user_sessions")      // user prefix + id hash → empty
	bucketSessionExpiry  = []byte("session_expiry")     // expiry + id hash → empty
	bucketResetTokens    = []byte("reset_tokens")       // token hash → reset token
	bucketUserTokens     = []byte("user_reset_tokens")  // user prefix + token hash → empty
	bucketOAuthFlows     = []byte("oauth_flows")        // state hash → flow
	bucketOAuthExpiry    = []byte("oauth_expiry")       // expiry + state hash → empty
	bucketMail           = []byte("mail")               // sequence → mail
	bucketInviteTokens   = []byte("invite_tokens")      // token hash → invite token
	bucketUserInvites    = []byte("user_invite_tokens") // user prefix + token hash → empty
	bucketSigningKeys    = []byte("signing_keys")       // key id → signing key
	bucketResetRequests  = []byte("reset_requests")     // "last_unknown" → time (see QueueResetRequest)
	bucketAPITokens      = []byte("api_tokens")         // token hash → API token
	bucketAPITokenIDs    = []byte("api_token_ids")      // token id → token hash
	bucketUserAPITokens  = []byte("user_api_tokens")    // user prefix + token hash → empty

	allBuckets = [][]byte{
		bucketUsers, bucketUsersByEmail, bucketIdentities, bucketUserIdentities,
		bucketSessions, bucketUserSessions, bucketSessionExpiry,
		bucketResetTokens, bucketUserTokens, bucketOAuthFlows, bucketOAuthExpiry,
		bucketMail, bucketInviteTokens, bucketUserInvites, bucketSigningKeys, bucketResetRequests,
		bucketFactors, bucketPasskeyIDs, bucketTOTPSteps, bucketRecoveryCodes, bucketPendingExpiry,
		bucketFactorSteps, bucketStepExpiry, bucketCeremonies, bucketCeremonyExp,
		bucketAPITokens, bucketAPITokenIDs, bucketUserAPITokens,
		bucketGrants, bucketGrantDue, bucketUsedMarks,
	}
)

// batchDelay is how long a Batch call waits for others to share its commit.
const batchDelay = 2 * time.Millisecond

// ErrLocked: the database file is held by another process (bbolt's file
// lock; a shared backend has no such error).
var ErrLocked = errors.New("storage/bolt: database is locked by another process")

// DefaultTimeout is how long Open waits for the file lock when Options.Timeout is zero.
const DefaultTimeout = 3 * time.Second

// Options tune Open.
type Options struct {
	// Timeout bounds the wait for the file lock held by another process;
	// Open then fails with ErrLocked. Zero or negative: DefaultTimeout.
	Timeout time.Duration
	// NoSync skips fsync after each commit. A crash can lose or corrupt the
	// database: for benchmarks and tests only.
	NoSync bool
	// MustExist refuses a missing file instead of creating a new database
	// (the CLI subcommands work on an existing one).
	MustExist bool
	// OnWrite, when set, is told the outcome of every write transaction
	// that tried to commit: nil when it committed, the error when the file
	// could not be written (disk full, read-only file system, I/O error).
	// Refusals decided by the store (storage.ErrNotFound and the like) are
	// not reported: they say nothing of the disk. It must not block.
	OnWrite func(err error)
}

// Store is a storage.Store on one bbolt file. It is safe for concurrent use.
type Store struct {
	db        *bbolt.DB
	onWrite   func(error) // Options.OnWrite, or nil
	sessions  sessionCache
	apiTokens apiTokenCache // tagged with sessions' write generation
}

var _ storage.Store = (*Store)(nil)

// errNoWrite, returned from an Update closure, rolls the transaction back
// because nothing changed; the method then reports success. It keeps
// lookups of unknown records (random cookies, stale states) from committing
// a transaction, which would write meta and freelist pages to disk.
var errNoWrite = errors.New("bolt: nothing to write")

// Open opens the database at path, or creates it (file mode 0600) when the
// file does not exist, its folder does and opts.MustExist is false. A file
// locked by another process yields an error wrapping ErrLocked
// after opts.Timeout; Open never waits longer.
//
// Open refuses, with a one-line error and never a panic, what is not a
// sound database: a missing folder (not created), an existing empty file
// (not silently made a new database), a file that is truncated, garbled or
// not bbolt at all. bbolt's panics and memory faults while opening are
// recovered and reported; a file up to fullCheckMaxSize is checked page by
// page (bbolt's Check), a larger one by reading each bucket's first and
// last keys.
func Open(path string, opts Options) (*Store, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	size, err := checkPath(path, opts.MustExist)
	if err != nil {
		return nil, err
	}
	// The hashmap freelist stays fast with many free pages (after a large
	// sweep). The freelist is still synced on commit: NoFreelistSync would
	// make commits cheaper then, but every Open would walk the whole file to
	// rebuild it (seconds for a million sessions on a cold cache), and the
	// CLI subcommands open the file on every call.
	db, err := openRecovering(path, size, &bbolt.Options{
		Timeout:      timeout,
		NoSync:       opts.NoSync,
		FreelistType: bbolt.FreelistMapType,
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("storage/bolt: open %s: waited %s: %w", path, timeout, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("storage/bolt: open %s: %w", path, err)
	}
	// Batch (reset requests) waits this long for company before it
	// commits: bbolt's 10 ms default would be every lone request's latency.
	db.MaxBatchDelay = batchDelay
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("bucket %s: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("storage/bolt: init %s: %w", path, err)
	}
	return &Store{db: db, onWrite: opts.OnWrite}, nil
}

// Close releases the file and its lock. Calls after the first return an error.
func (s *Store) Close() error {
	err := s.db.Close()
	// Nothing more from memory: with the lock released, another process
	// may change the file.
	s.sessions.invalidate()
	return err
}

// Ping reports whether the store can be read: one read transaction.
func (s *Store) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.View(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketSessions) == nil {
			return errors.New("storage/bolt: sessions bucket missing")
		}
		return nil
	})
}

// update runs fn in a read-write transaction; fn returns errNoWrite to roll
// back without error when it found nothing to change.
func (s *Store) update(ctx context.Context, fn func(tx *bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var fnErr error
	err := s.db.Update(func(tx *bbolt.Tx) error { fnErr = fn(tx); return fnErr })
	if errors.Is(err, errNoWrite) { // rolled back: nothing changed
		s.reportWrite(err, fnErr)
		return nil
	}
	s.sessions.invalidate() // before the caller hears of the write (sessioncache.go)
	s.reportWrite(err, fnErr)
	return err
}

// reportWrite tells Options.OnWrite how a write transaction ended: err is
// the transaction's error, fnErr what its closure returned. An error the
// closure returned is the store's own decision, not a disk failure.
func (s *Store) reportWrite(err, fnErr error) {
	switch {
	case s.onWrite == nil:
	case err == nil:
		s.onWrite(nil)
	case fnErr == nil || !errors.Is(err, fnErr):
		s.onWrite(err)
	}
}

// batch runs fn in a read-write transaction that bbolt may share with
// other concurrent batch calls (one commit for all). fn may run more than
// once, so it must only write inside tx.
func (s *Store) batch(ctx context.Context, fn func(tx *bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var fnErr error
	err := s.db.Batch(func(tx *bbolt.Tx) error { fnErr = fn(tx); return fnErr })
	s.sessions.invalidate()
	s.reportWrite(err, fnErr)
	return err
}

// view runs fn in a read-only transaction.
func (s *Store) view(ctx context.Context, fn func(tx *bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.View(fn)
}

// notFound wraps storage.ErrNotFound with what was looked for.
func notFound(what string) error {
	return fmt.Errorf("storage/bolt: %s: %w", what, storage.ErrNotFound)
}
