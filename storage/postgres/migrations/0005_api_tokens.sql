-- Gatehouse schema version 5: API tokens of scripts and services, stored
-- only by their SHA-256. A token belongs to a user (user_id, deleted with
-- the user) or to a service (service, with groups). NULL expires_at: never
-- expires; NULL last_used: never used.

CREATE TABLE api_tokens (
	id         text COLLATE "C" PRIMARY KEY,
	hash       bytea NOT NULL UNIQUE,
	name       text NOT NULL,
	user_id    text NOT NULL,
	service    text NOT NULL,
	groups     text[] NOT NULL,
	created_at timestamptz NOT NULL,
	expires_at timestamptz,
	last_used  timestamptz,
	CHECK ((user_id = '') <> (service = ''))
);
CREATE INDEX api_tokens_user_id ON api_tokens (user_id) WHERE user_id <> '';
