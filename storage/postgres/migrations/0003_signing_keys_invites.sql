-- Gatehouse schema version 3: the signing keys of the identity assertions
-- (shared, so every replica signs with and publishes the same keys) and
-- invite tokens, a token kind of its own beside reset tokens; the marker of
-- reset requests for unknown addresses.

CREATE TABLE signing_keys (
	id          text COLLATE "C" PRIMARY KEY,
	private_key bytea NOT NULL, -- PKCS#8 DER
	created_at  timestamptz NOT NULL,
	active_from timestamptz NOT NULL
);

CREATE TABLE invite_tokens (
	hash       bytea PRIMARY KEY,
	user_id    text NOT NULL,
	created_at timestamptz NOT NULL,
	expires_at timestamptz NOT NULL
);
CREATE INDEX invite_tokens_user_id ON invite_tokens (user_id);
CREATE INDEX invite_tokens_expires_at ON invite_tokens (expires_at);

-- The one record a password reset request for an unknown address writes
-- (the time of the last one), so that such a request costs a commit as a
-- known address's does, without growing the database.
CREATE TABLE reset_requests (
	name text PRIMARY KEY,
	at   timestamptz NOT NULL
);
