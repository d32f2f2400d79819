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
package bolt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

	allBuckets = [][]byte{
		bucketUsers, bucketUsersByEmail, bucketIdentities, bucketUserIdentities,
		bucketSessions, bucketUserSessions, bucketSessionExpiry,
		bucketResetTokens, bucketUserTokens, bucketOAuthFlows, bucketOAuthExpiry,
		bucketMail, bucketInviteTokens, bucketUserInvites, bucketSigningKeys,
	}
)

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
}

// Store is a storage.Store on one bbolt file. It is safe for concurrent use.
type Store struct {
	db *bbolt.DB
}

var _ storage.Store = (*Store)(nil)

// errNoWrite, returned from an Update closure, rolls the transaction back
// because nothing changed; the method then reports success. It keeps
// lookups of unknown records (random cookies, stale states) from committing
// a transaction, which would write meta and freelist pages to disk.
var errNoWrite = errors.New("bolt: nothing to write")

// Open opens or creates the database at path (file mode 0600, parent
// directory created with 0700 if missing) and its buckets. A file locked by
// another process yields an error wrapping ErrLocked after
// opts.Timeout; Open never waits longer.
func Open(path string, opts Options) (*Store, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("storage/bolt: create directory of %s: %w", path, err)
	}
	// The hashmap freelist stays fast with many free pages (after a large
	// sweep). The freelist is still synced on commit: NoFreelistSync would
	// make commits cheaper then, but every Open would walk the whole file to
	// rebuild it (seconds for a million sessions on a cold cache), and the
	// CLI subcommands open the file on every call.
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{
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
	return &Store{db: db}, nil
}

// Close releases the file and its lock. Calls after the first return an error.
func (s *Store) Close() error { return s.db.Close() }

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
	err := s.db.Update(fn)
	if errors.Is(err, errNoWrite) {
		return nil
	}
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
