-- Gatehouse schema version 6: second factors (TOTP, passkeys, recovery
-- codes), the per-user last accepted TOTP step, the second-factor step
-- between a first factor and the session, WebAuthn ceremonies in progress,
-- and the second factor a session was made with. A user's factors,
-- recovery codes and last step go with the user (ON DELETE CASCADE), and
-- none can be added for a user that does not exist; steps and ceremonies
-- simply lapse.

CREATE TABLE totp_factors (
	id         text PRIMARY KEY,
	user_id    text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	name       text NOT NULL,
	secret     bytea NOT NULL,
	confirmed  boolean NOT NULL,
	created_at timestamptz NOT NULL,
	expires_at timestamptz -- pending only; NULL once confirmed
);
CREATE INDEX totp_factors_user_id ON totp_factors (user_id);
CREATE INDEX totp_factors_pending_expires_at ON totp_factors (expires_at) WHERE NOT confirmed;

CREATE TABLE passkeys (
	id                 text PRIMARY KEY,
	user_id            text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	name               text NOT NULL,
	credential_id      bytea NOT NULL UNIQUE,
	public_key         bytea NOT NULL,
	attestation_type   text NOT NULL,
	attestation_format text NOT NULL,
	aaguid             bytea NOT NULL,
	sign_count         bigint NOT NULL,
	transports         text[] NOT NULL,
	user_verified      boolean NOT NULL,
	backup_eligible    boolean NOT NULL,
	backup_state       boolean NOT NULL,
	user_handle        bytea NOT NULL,
	created_at         timestamptz NOT NULL,
	last_used_at       timestamptz
);
CREATE INDEX passkeys_user_id ON passkeys (user_id);

CREATE TABLE totp_steps (
	user_id text PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
	step    bigint NOT NULL
);

CREATE TABLE recovery_codes (
	user_id   text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	code_hash bytea NOT NULL,
	PRIMARY KEY (user_id, code_hash)
);

CREATE TABLE second_factor_steps (
	browser_hash bytea PRIMARY KEY,
	user_id      text NOT NULL,
	epoch        bigint NOT NULL,
	method       text NOT NULL,
	groups       text NOT NULL,
	redirect     text NOT NULL,
	created_at   timestamptz NOT NULL,
	expires_at   timestamptz NOT NULL
);
CREATE INDEX second_factor_steps_expires_at ON second_factor_steps (expires_at);

CREATE TABLE webauthn_ceremonies (
	browser_hash bytea PRIMARY KEY,
	purpose      text NOT NULL,
	user_id      text NOT NULL,
	session_hash bytea NOT NULL,
	data         bytea NOT NULL,
	created_at   timestamptz NOT NULL,
	expires_at   timestamptz NOT NULL
);
CREATE INDEX webauthn_ceremonies_expires_at ON webauthn_ceremonies (expires_at);

ALTER TABLE sessions ADD COLUMN second_factor text NOT NULL DEFAULT '';
