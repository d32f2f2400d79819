package postgres_test

import (
	"os"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/postgres"
	"github.com/gatehouse-auth/gatehouse/storage/postgres/pgtest"
	"github.com/gatehouse-auth/gatehouse/storage/storagetest"
)

var pg *pgtest.Server

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &pg)) }

// open returns a store on a fresh database.
func open(t *testing.T) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), pg.NewDatabase(t), postgres.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// openURL returns a store on the database url, closed when t ends.
func openURL(t *testing.T, url string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), url, postgres.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store { return open(t) })
}

func TestConformanceReopen(t *testing.T) {
	storagetest.RunReopen(t, func(t *testing.T) (storage.Store, func(t *testing.T) storage.Store) {
		url := pg.NewDatabase(t)
		first, err := postgres.Open(t.Context(), url, postgres.Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return first, func(t *testing.T) storage.Store {
			s, err := postgres.Open(t.Context(), url, postgres.Options{})
			if err != nil {
				t.Fatalf("Open again: %v", err)
			}
			return s
		}
	})
}

// TestConformanceCached: the session cache over PostgreSQL, fed by its
// listener and live (serving from memory), passes the whole suite too.
func TestConformanceCached(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		r := newReplica(t, pg.NewDatabase(t))
		if !eventually(5*time.Second, r.cache.Live) {
			t.Fatal("cache never live")
		}
		return r.cache
	})
}
