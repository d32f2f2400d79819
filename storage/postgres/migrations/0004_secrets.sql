-- Server secrets (device cookie key, ...): made once, by whichever replica
-- asks first, and shared by all.
CREATE TABLE secrets (
	name  text PRIMARY KEY,
	value bytea NOT NULL
);
