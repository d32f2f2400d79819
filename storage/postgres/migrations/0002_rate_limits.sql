-- Gatehouse schema version 2: throttles counted in the database, so that
-- they hold across replicas. A bucket is kept as the time at which it is
-- full again; a row whose full_at has passed is a full bucket and may go.

CREATE TABLE rate_limits (
	bucket  text NOT NULL,
	key     bytea NOT NULL, -- keys may be binary (a hash of the account)
	full_at timestamptz NOT NULL,
	PRIMARY KEY (bucket, key)
);
CREATE INDEX rate_limits_full_at ON rate_limits (full_at);
