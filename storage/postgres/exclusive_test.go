package postgres_test

import (
	"context"
	"testing"

	"github.com/gatehouse-auth/gatehouse/storage/postgres"
)

// TestExclusiveOneAtATime: while one replica runs a job, another replica's
// attempt at the same job does not run; a different job does; after the
// first finishes, the job runs again.
func TestExclusiveOneAtATime(t *testing.T) {
	url := pg.NewDatabase(t)
	a, err := postgres.Open(t.Context(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := postgres.Open(t.Context(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var inner, other bool
	ran, err := a.Exclusive(t.Context(), "sweep", func(ctx context.Context) error {
		var err error
		if inner, err = b.Exclusive(ctx, "sweep", func(context.Context) error { return nil }); err != nil {
			return err
		}
		other, err = b.Exclusive(ctx, "other job", func(context.Context) error { return nil })
		return err
	})
	if err != nil || !ran {
		t.Fatalf("first Exclusive: ran %v, err %v", ran, err)
	}
	if inner {
		t.Fatal("the same job ran on two replicas at once")
	}
	if !other {
		t.Fatal("another job was kept from running")
	}
	if ran, err := b.Exclusive(t.Context(), "sweep", func(context.Context) error { return nil }); err != nil || !ran {
		t.Fatalf("after the first finished: ran %v, err %v", ran, err)
	}
}
