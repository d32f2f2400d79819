package pgtest_test

import (
	"os"
	"testing"

	"github.com/gatehouse-auth/gatehouse/storage/postgres/pgtest"
	"github.com/jackc/pgx/v5"
)

var pg *pgtest.Server

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &pg)) }

// TestDatabasesAreFreshAndSeparate: each test database starts empty and a
// table made in one is not seen in another.
func TestDatabasesAreFreshAndSeparate(t *testing.T) {
	a, b := pg.NewDatabase(t), pg.NewDatabase(t)
	if a == b {
		t.Fatalf("two databases with one URL %s", a)
	}
	connA, err := pgx.Connect(t.Context(), a)
	if err != nil {
		t.Fatal(err)
	}
	defer connA.Close(t.Context())
	if _, err := connA.Exec(t.Context(), "CREATE TABLE marker (x int)"); err != nil {
		t.Fatal(err)
	}
	connB, err := pgx.Connect(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	defer connB.Close(t.Context())
	var n int
	if err := connB.QueryRow(t.Context(), "SELECT count(*) FROM pg_tables WHERE tablename = 'marker'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("table of database a seen in database b")
	}
	var listen string
	if err := connB.QueryRow(t.Context(), "SHOW listen_addresses").Scan(&listen); err != nil {
		t.Fatal(err)
	}
	if listen != "" {
		t.Fatalf("listen_addresses = %q, want Unix socket only", listen)
	}
}

// TestRequired: CI=true or PGTEST_REQUIRED=1 turn a missing PostgreSQL
// into a failure (Missing), so CI never skips the PostgreSQL tests.
func TestRequired(t *testing.T) {
	for _, tc := range []struct {
		ci, required string
		want         bool
	}{
		{"", "", false},
		{"false", "0", false},
		{"true", "", true},
		{"", "1", true},
	} {
		t.Setenv("CI", tc.ci)
		t.Setenv(pgtest.RequiredEnv, tc.required)
		if got := pgtest.Required(); got != tc.want {
			t.Errorf("CI=%q %s=%q: Required() = %v, want %v", tc.ci, pgtest.RequiredEnv, tc.required, got, tc.want)
		}
	}
}
