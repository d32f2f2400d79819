-- Gatehouse schema version 7: the grants of provider sessions (who the
-- provider account is, the OpenID Provider's session id, the provider's
-- tokens sealed by Gatehouse, when to check again), which go with their
-- session (ON DELETE CASCADE), and the single-use marks of tokens a
-- provider sends (a logout token's jti), kept until they expire.

CREATE TABLE session_grants (
	session_hash bytea PRIMARY KEY REFERENCES sessions (id_hash) ON DELETE CASCADE,
	user_id      text NOT NULL,
	provider     text NOT NULL,
	subject      text NOT NULL,
	sid          text NOT NULL,
	tokens       bytea,
	next_refresh timestamptz NOT NULL
);
CREATE INDEX session_grants_next_refresh ON session_grants (next_refresh);
CREATE INDEX session_grants_subject ON session_grants (provider, subject);
CREATE INDEX session_grants_sid ON session_grants (provider, sid) WHERE sid <> '';

CREATE TABLE used_marks (
	key   bytea PRIMARY KEY,
	until timestamptz NOT NULL
);
CREATE INDEX used_marks_until ON used_marks (until);
