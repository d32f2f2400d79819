-- Gatehouse schema version 1: the records of storage (see storage/storage.go).
-- Secrets are stored only by their SHA-256 (bytea of 32 bytes).

CREATE TABLE users (
	id            text PRIMARY KEY,
	email         text NOT NULL UNIQUE,
	password_hash text NOT NULL,
	created_at    timestamptz NOT NULL,
	disabled      boolean NOT NULL DEFAULT false,
	epoch         bigint NOT NULL DEFAULT 0
);

CREATE TABLE identities (
	provider   text NOT NULL,
	subject    text NOT NULL,
	email      text NOT NULL,
	user_id    text NOT NULL,
	created_at timestamptz NOT NULL,
	PRIMARY KEY (provider, subject),
	UNIQUE (user_id, provider)
);

CREATE TABLE sessions (
	id_hash    bytea PRIMARY KEY,
	user_id    text NOT NULL,
	email      text NOT NULL,
	created_at timestamptz NOT NULL,
	expires_at timestamptz NOT NULL,
	last_seen  timestamptz NOT NULL,
	epoch      bigint NOT NULL,
	method     text NOT NULL,
	groups     text NOT NULL,
	ip         text NOT NULL,
	user_agent text NOT NULL
);
CREATE INDEX sessions_user_id ON sessions (user_id);
CREATE INDEX sessions_expires_at ON sessions (expires_at);
CREATE INDEX sessions_last_seen ON sessions (last_seen);

CREATE TABLE reset_tokens (
	hash       bytea PRIMARY KEY,
	user_id    text NOT NULL,
	created_at timestamptz NOT NULL,
	expires_at timestamptz NOT NULL
);
CREATE INDEX reset_tokens_user_id ON reset_tokens (user_id);
CREATE INDEX reset_tokens_expires_at ON reset_tokens (expires_at);

CREATE TABLE oauth_flows (
	state_hash   bytea PRIMARY KEY,
	provider     text NOT NULL,
	purpose      text NOT NULL,
	verifier     text NOT NULL,
	nonce        text NOT NULL,
	redirect     text NOT NULL,
	browser_hash bytea NOT NULL,
	session_hash bytea NOT NULL,
	created_at   timestamptz NOT NULL,
	expires_at   timestamptz NOT NULL
);
CREATE INDEX oauth_flows_expires_at ON oauth_flows (expires_at);

CREATE TABLE mail (
	id           bigserial PRIMARY KEY,
	kind         text NOT NULL,
	user_id      text NOT NULL,
	to_addr      text NOT NULL,
	subject      text NOT NULL,
	text_body    text NOT NULL,
	html_body    text NOT NULL,
	attempts     integer NOT NULL,
	next_attempt timestamptz NOT NULL,
	created_at   timestamptz NOT NULL
);
CREATE INDEX mail_next_attempt ON mail (next_attempt, id);
CREATE INDEX mail_user_id ON mail (user_id);
