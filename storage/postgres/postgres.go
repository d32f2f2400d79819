// Package postgres is the shared storage backend of Gatehouse: it implements
// storage.Store on PostgreSQL so that several Gatehouse processes can serve
// one set of users and sessions.
//
// Dependencies: postgres imports storage and github.com/jackc/pgx/v5 only. No
// pgx type leaves this package.
//
// Every method is one statement or one transaction, so it is atomic on its
// own. A change that revokes sessions (logout, revoke-sessions, reset,
// disable, delete) also sends a NOTIFY on RevokeChannel in the same
// transaction, so that it fires on commit and only then; Listen receives
// them for a per-replica session cache (storage/cache).
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// ErrSchemaTooNew: the database was migrated by a newer Gatehouse; this
// binary does not know its layout and refuses to use it.
var ErrSchemaTooNew = errors.New("storage/postgres: database schema is newer than this binary")

// MigrationLockKey is the session advisory lock that serializes the
// migrations of processes starting together ("gatehous" in ASCII): a
// process holding it is migrating.
const MigrationLockKey int64 = 0x6761746568617573

// DefaultConnectTimeout bounds Open's first connection when Options.ConnectTimeout is zero.
const DefaultConnectTimeout = 10 * time.Second

// DefaultMigrateTimeout bounds Open's migrations, and its wait for those of
// another process, when Options.MigrateTimeout is zero.
const DefaultMigrateTimeout = 5 * time.Minute

// Options tune Open.
type Options struct {
	// ConnectTimeout bounds each connection attempt, the first one included.
	ConnectTimeout time.Duration
	// MigrateTimeout bounds the migrations, the wait for another process
	// that is migrating included: replicas starting together on an empty
	// database wait for the one that migrates, however long it takes
	// under load, rather than give up after ConnectTimeout.
	MigrateTimeout time.Duration
	// MaxConns caps the pool (0: pgx's default, the larger of 4 and the CPUs).
	MaxConns int32
}

// Store is a storage.Store on a PostgreSQL database. It is safe for
// concurrent use by many goroutines and many processes.
type Store struct {
	pool *pgxpool.Pool
	url  string // for Listen's own connection
}

var _ storage.Store = (*Store)(nil)

// Open connects to the database at url (anything pgx accepts: postgres://,
// postgresql://, a key=value string), runs the migrations this binary has
// and the database lacks, under an advisory lock, and returns the store. A
// database whose schema is newer than the binary's: ErrSchemaTooNew. Errors
// never hold the password.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("storage/postgres: parse URL: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	timeout := opts.ConnectTimeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	cfg.ConnConfig.ConnectTimeout = timeout
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "gatehouse"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("storage/postgres: %w", err)
	}
	connectCtx, cancel := context.WithTimeout(ctx, timeout)
	conn, err := pool.Acquire(connectCtx)
	cancel()
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("storage/postgres: connect: %w", err)
	}
	migrateTimeout := opts.MigrateTimeout
	if migrateTimeout <= 0 {
		migrateTimeout = DefaultMigrateTimeout
	}
	migrateCtx, cancel := context.WithTimeout(ctx, migrateTimeout)
	err = migrate(migrateCtx, conn)
	cancel()
	conn.Release()
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &Store{pool: pool, url: url}, nil
}

// migration is one numbered schema step.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		num, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("storage/postgres: migration %s: bad version", e.Name())
		}
		body, err := fs.ReadFile(migrationFiles, "migrations/"+e.Name())
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("storage/postgres: migration %s: want version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the schema version this binary migrates to.
func SchemaVersion() int {
	ms, _ := migrations()
	return len(ms)
}

// migrate brings the schema to SchemaVersion on conn, holding the advisory
// lock so that replicas starting together migrate once.
func migrate(ctx context.Context, conn *pgxpool.Conn) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", MigrationLockKey); err != nil {
		return fmt.Errorf("storage/postgres: waiting for the migration lock (another process migrating the database holds it): %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", MigrationLockKey)
	}()
	_, err = conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS gatehouse_schema (
		version    integer PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`)
	if err != nil {
		return fmt.Errorf("storage/postgres: schema table: %w", err)
	}
	var current int
	if err := conn.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM gatehouse_schema").Scan(&current); err != nil {
		return fmt.Errorf("storage/postgres: schema version: %w", err)
	}
	if current > len(ms) {
		return fmt.Errorf("%w (database: version %d, binary: version %d)", ErrSchemaTooNew, current, len(ms))
	}
	for _, m := range ms[current:] {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO gatehouse_schema (version) VALUES ($1)", m.version)
			return err
		})
		if err != nil {
			return fmt.Errorf("storage/postgres: migration %s: %w", m.name, err)
		}
	}
	return nil
}

// Close closes the pool. Calls after the first are no-ops; Ping then fails.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("storage/postgres: ping: %w", err)
	}
	return nil
}

// tx runs fn in a transaction: committed when fn returns nil, rolled back otherwise.
func (s *Store) tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// isUnique reports whether err is a unique violation of the named constraint.
func isUnique(err error, constraint string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == constraint
}

// notFound wraps storage.ErrNotFound with what was looked for.
func notFound(what string) error {
	return fmt.Errorf("storage/postgres: %s: %w", what, storage.ErrNotFound)
}

// wrap adds the package and operation to a driver error; pgx.ErrNoRows becomes storage.ErrNotFound.
func wrap(op string, err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound(op)
	}
	return fmt.Errorf("storage/postgres: %s: %w", op, err)
}

// hashFrom copies a bytea into a Hash.
func hashFrom(b []byte) storage.Hash {
	var h storage.Hash
	copy(h[:], b)
	return h
}

// CheckURL reports whether url is a connection string pgx accepts, without
// connecting.
func CheckURL(url string) error {
	_, err := pgxpool.ParseConfig(url)
	return err
}
