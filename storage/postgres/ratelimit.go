package postgres

import (
	"context"
	"time"
)

// TakeToken takes one token from the bucket (bucket, key) that holds burst
// tokens and gets one back every period/burst, and reports whether one was
// there. Keys may be any bytes. It is one statement, so replicas taking at once never take more
// than there is. The arithmetic is authflows' keyedLimiter's: the bucket
// is the time at which it is full again.
func (s *Store) TakeToken(ctx context.Context, bucket, key string, now time.Time, burst int, period time.Duration) (bool, error) {
	if !validText(bucket) {
		return false, nil
	}
	interval := (period / time.Duration(burst)).Microseconds()
	slack := int64(burst-1) * interval
	rows, err := s.pool.Query(ctx, `INSERT INTO rate_limits AS r (bucket, key, full_at)
		VALUES ($1, $2, $3::timestamptz + $4 * interval '1 microsecond')
		ON CONFLICT (bucket, key) DO UPDATE
		SET full_at = greatest(r.full_at, $3::timestamptz) + $4 * interval '1 microsecond'
		WHERE greatest(r.full_at, $3::timestamptz) <= $3::timestamptz + $5 * interval '1 microsecond'
		RETURNING true`, bucket, []byte(key), now, interval, slack)
	if err != nil {
		return false, wrap("take token", err)
	}
	defer rows.Close()
	taken := rows.Next()
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, wrap("take token", err)
	}
	return taken, nil
}

// RefundToken gives back a token taken for an event that, in the end, does
// not count (a sign-in that succeeded).
func (s *Store) RefundToken(ctx context.Context, bucket, key string, now time.Time, burst int, period time.Duration) error {
	if !validText(bucket) {
		return nil
	}
	interval := (period / time.Duration(burst)).Microseconds()
	_, err := s.pool.Exec(ctx, `UPDATE rate_limits SET full_at = full_at - $3 * interval '1 microsecond'
		WHERE bucket = $1 AND key = $2`, bucket, []byte(key), interval)
	return wrap2("refund token", err)
}

// DeleteFullRateBuckets deletes the buckets that are full again at now (a
// missing bucket is a full one) and reports how many.
func (s *Store) DeleteFullRateBuckets(ctx context.Context, now time.Time) (int, error) {
	return sweep(ctx, s, `DELETE FROM rate_limits WHERE (bucket, key) IN
		(SELECT bucket, key FROM rate_limits WHERE full_at <= $1 LIMIT $2)`, now, sweepChunk)
}
