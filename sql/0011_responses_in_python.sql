-- Responses are built in one place, in Python, from read-model rows: the functions that built
-- API JSON inside the database go, and so does the token record that was kept ready as text
-- (changing a response must never need a migration).
DROP FUNCTION readmodel.feature_environments_json(text, text);
DROP FUNCTION readmodel.strategy_json(readmodel.feature_strategies);
DROP FUNCTION readmodel.project_environments_json(text);
DROP FUNCTION readmodel.feature_tags_json(text);
DROP FUNCTION readmodel.feature_dependencies_json(text);
DROP FUNCTION readmodel.feature_children_json(text);
DROP FUNCTION readmodel.pat_body(bigint, text, timestamptz, timestamptz, bigint, text, timestamptz);
DROP FUNCTION readmodel.api_time(timestamptz);

ALTER TABLE readmodel.personal_access_tokens DROP COLUMN body;

