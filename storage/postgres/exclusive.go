package postgres

import (
	"context"
	"fmt"
)

// exclusiveLockClass is the first key of the advisory locks of Exclusive
// ("gate" in ASCII); the second is the hash of the job's name.
const exclusiveLockClass = 0x67617465

// Exclusive runs fn unless another process runs the job of the same name
// right now, so that work every replica schedules (the sweep) is done by one
// replica at a time. It reports whether fn ran. The lock is a session
// advisory lock on one pooled connection, released when fn returns (or, if
// the process dies, when its connection closes).
func (s *Store) Exclusive(ctx context.Context, job string, fn func(ctx context.Context) error) (bool, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, wrap("exclusive "+job, err)
	}
	defer conn.Release()
	var got bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, hashtext($2))", exclusiveLockClass, job).Scan(&got); err != nil {
		return false, wrap("exclusive "+job, err)
	}
	if !got {
		return false, nil
	}
	defer func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1, hashtext($2))", exclusiveLockClass, job); err != nil {
			conn.Conn().Close(context.WithoutCancel(ctx)) // closing the session releases the lock
		}
	}()
	if err := fn(ctx); err != nil {
		return true, fmt.Errorf("%s: %w", job, err)
	}
	return true, nil
}
