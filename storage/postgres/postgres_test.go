package postgres_test

import (
	"os"
	"testing"

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

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store { return open(t) })
}
