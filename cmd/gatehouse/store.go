package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-auth/gatehouse/authflows"
	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
	"github.com/gatehouse-auth/gatehouse/storage/cache"
	"github.com/gatehouse-auth/gatehouse/storage/postgres"
)

// lockTimeout is how long a start or a subcommand waits for a database file
// that another process holds before it gives up; the contract allows 5 s.
const lockTimeout = 3 * time.Second

// connectTimeout bounds the first connection to PostgreSQL at start.
const connectTimeout = 5 * time.Second

// isPostgresURL reports whether --db names a PostgreSQL database rather than
// a bbolt file.
func isPostgresURL(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// checkDB checks --db without opening it: a PostgreSQL URL must parse.
func checkDB(db string) error {
	if db == "" {
		return flagError("db", "is required")
	}
	if !isPostgresURL(db) && strings.Contains(db, "://") {
		return flagError("db", "unsupported URL scheme: want a bbolt file path or a postgres:// URL")
	}
	if isPostgresURL(db) {
		if err := postgres.CheckURL(db); err != nil {
			return flagError("db", "not a valid PostgreSQL URL: %s", hidePassword(db, err.Error()))
		}
	}
	return nil
}

// hidePassword replaces in msg every password that db carries (user info
// or a password= parameter), and flattens msg to one line.
func hidePassword(db, msg string) string {
	if u, err := url.Parse(db); err == nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
		if pw := u.Query().Get("password"); pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return strings.Join(strings.Fields(msg), " ")
}

// openStore is the backend switch: a postgres:// or postgresql:// URL is
// PostgreSQL, anything else a bbolt file. The CLI subcommands use the
// store as it is; a server wraps a PostgreSQL one in a session cache
// (openServerStore).
//
// mustExist refuses a missing bbolt file (the users subcommands) instead of
// creating it; onWrite, when set, is told the outcome of every bbolt commit
// (writeHealth).
func openStore(db string, mustExist bool, onWrite func(error)) (storage.Store, error) {
	if isPostgresURL(db) {
		s, err := openPostgres(db)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	s, err := bolt.Open(db, bolt.Options{Timeout: lockTimeout, MustExist: mustExist, OnWrite: onWrite})
	if errors.Is(err, bolt.ErrLocked) {
		return nil, fmt.Errorf("database %s is locked by another process (waited %s; is another gatehouse running on it?)", db, lockTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", db, err)
	}
	return s, nil
}

// openPostgres connects and migrates; the error names --db and never the
// password. Open bounds the connection (connectTimeout) and the migrations,
// which may wait for another replica's.
func openPostgres(db string) (*postgres.Store, error) {
	s, err := postgres.Open(context.Background(), db, postgres.Options{ConnectTimeout: connectTimeout})
	if errors.Is(err, postgres.ErrSchemaTooNew) {
		return nil, fmt.Errorf("--db: %s; upgrade this gatehouse", hidePassword(db, err.Error()))
	}
	if err != nil {
		return nil, fmt.Errorf("--db: cannot open the PostgreSQL database: %s", hidePassword(db, err.Error()))
	}
	return s, nil
}

// openServerStore is openStore for a running server: a PostgreSQL store
// comes wrapped in a per-replica session cache fed by LISTEN/NOTIFY, whose
// listener runs until the store is closed. idle is --session-idle-ttl
// (cacheMaxAge).
func openServerStore(db string, log *slog.Logger, onWrite func(error), idle time.Duration) (storage.Store, error) {
	if !isPostgresURL(db) {
		return openStore(db, false, onWrite)
	}
	s, err := openPostgres(db)
	if err != nil {
		return nil, err
	}
	c := cache.New(s, cache.Options{MaxAge: cacheMaxAge(idle)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Listen(ctx, c, postgres.ListenOptions{OnError: func(err error) {
			log.Warn("session cache bypassed: notification connection lost", "err", hidePassword(db, err.Error()))
		}})
	}()
	return &listenedStore{Store: c, pg: s, stop: cancel, done: done}, nil
}

// cacheMaxAge is how long a replica serves a cached session before reading
// it again: a quarter of the idle limit at most. Other replicas' last-seen
// writes send no notification, so a session used only through another
// replica looks idle here by its cached LastSeen; read again this often, it
// is at most touch interval + flush interval + this behind, under the
// limit (SS5).
func cacheMaxAge(idle time.Duration) time.Duration {
	if idle <= 0 {
		return cache.DefaultMaxAge
	}
	return min(cache.DefaultMaxAge, idle/4)
}

// listenedStore is a cached store whose listener stops on Close.
type listenedStore struct {
	*cache.Store
	pg   *postgres.Store
	stop context.CancelFunc
	done chan struct{}
}

// Exclusive runs fn unless another replica runs the job now (see postgres.Store.Exclusive).
func (s *listenedStore) Exclusive(ctx context.Context, job string, fn func(ctx context.Context) error) (bool, error) {
	return s.pg.Exclusive(ctx, job, fn)
}

// UpgradePasswordHash is the PostgreSQL store's compare-and-swap of a
// password hash (it keeps the credential epoch; see authflows).
func (s *listenedStore) UpgradePasswordHash(ctx context.Context, userID, oldHash, newHash string) error {
	return s.pg.UpgradePasswordHash(ctx, userID, oldHash, newHash)
}

// sharedLimits returns the store that counts throttles across replicas,
// nil for a store of one process.
func sharedLimits(store storage.Store) authflows.RateStore {
	if s, ok := store.(*listenedStore); ok {
		return s.pg
	}
	return nil
}

// DeleteFullRateBuckets deletes the throttle buckets that are full again.
func (s *listenedStore) DeleteFullRateBuckets(ctx context.Context, now time.Time) (int, error) {
	return s.pg.DeleteFullRateBuckets(ctx, now)
}

// exclusiveRunner is a shared store that runs a job on one replica at a time.
type exclusiveRunner interface {
	Exclusive(ctx context.Context, job string, fn func(ctx context.Context) error) (bool, error)
}

// Close stops the listener, then closes the database.
func (s *listenedStore) Close() error {
	s.stop()
	<-s.done
	return s.Store.Close()
}

// registerCacheMetrics exports the session cache's counters, when the store has a cache.
func registerCacheMetrics(reg prometheus.Registerer, store storage.Store) {
	s, ok := store.(*listenedStore)
	if !ok {
		return
	}
	for _, m := range []struct {
		result string
		value  func(cache.Stats) uint64
	}{
		{"hit", func(st cache.Stats) uint64 { return st.Hits }},
		{"miss", func(st cache.Stats) uint64 { return st.Misses }},
		{"bypass", func(st cache.Stats) uint64 { return st.Bypassed }},
	} {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "gatehouse_session_cache_lookups_total",
			Help:        "Session lookups by the per-replica cache: hit (from memory), miss (read and kept), bypass (read while the cache cannot be trusted).",
			ConstLabels: prometheus.Labels{"result": m.result},
		}, func() float64 { return float64(m.value(s.Stats())) }))
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gatehouse_session_cache_live",
		Help: "1 while the session cache is trusted (notification connection up, heartbeat on time), else 0.",
	}, func() float64 {
		if s.Live() {
			return 1
		}
		return 0
	}))
}
