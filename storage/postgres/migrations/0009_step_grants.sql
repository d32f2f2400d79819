-- Gatehouse schema version 9: a second-factor step of a provider sign-in
-- keeps the provider grant (session_grants' columns, the tokens sealed by
-- Gatehouse) for the session it makes; a ?reauth=second-factor step keeps
-- the grant of the session it upgrades. NULL grant_provider: no grant.
ALTER TABLE second_factor_steps
	ADD COLUMN grant_provider text,
	ADD COLUMN grant_subject text NOT NULL DEFAULT '',
	ADD COLUMN grant_sid text NOT NULL DEFAULT '',
	ADD COLUMN grant_tokens bytea,
	ADD COLUMN grant_next_refresh timestamptz;
