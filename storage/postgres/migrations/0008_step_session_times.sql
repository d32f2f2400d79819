-- Gatehouse schema version 8: a second-factor step that adds a second
-- factor to a session (?reauth=second-factor) keeps that session's
-- creation time and absolute expiry for the session it makes; NULL for a
-- step of a sign-in.
ALTER TABLE second_factor_steps
	ADD COLUMN session_created_at timestamptz,
	ADD COLUMN session_expires_at timestamptz;
