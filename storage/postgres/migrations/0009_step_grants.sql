-- Gatehouse schema version 9: a second-factor step of a provider sign-in
-- keeps the grant its session gets when the step ends (the provider, the
-- account, the OpenID Provider's sid, the sealed tokens); NULL provider
-- for any other step.
ALTER TABLE second_factor_steps
	ADD COLUMN grant_provider text,
	ADD COLUMN grant_subject text,
	ADD COLUMN grant_sid text,
	ADD COLUMN grant_tokens bytea;
