-- Gatehouse schema version 5 is the API tokens' migration, made on another
-- branch at the same time as version 6; this placeholder keeps the versions
-- consecutive until it is merged, and is deleted then.
SELECT 1;
