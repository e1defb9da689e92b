-- User search at a million users (behavior.md section 5; the plan is in service/users/search.py).
-- pg_trgm is a trusted extension: a database owner may create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- What search compares, lower-cased once when a row is written instead of on every search.
ALTER TABLE readmodel.users
    ADD COLUMN search_name text GENERATED ALWAYS AS (lower(name)) STORED,
    ADD COLUMN search_username text GENERATED ALWAYS AS (lower(username)) STORED,
    ADD COLUMN search_email text GENERATED ALWAYS AS (lower(email)) STORED;

-- Exact matches (the first tier).
CREATE INDEX users_search_name_eq ON readmodel.users (search_name COLLATE "C");
CREATE INDEX users_search_username_eq ON readmodel.users (search_username COLLATE "C");
CREATE INDEX users_search_email_eq ON readmodel.users (search_email COLLATE "C");

-- Prefix matches (the second tier), in result order: people grouped by the first three
-- characters of the field, then by name and id. For a query of three characters or more the
-- first page is the start of one group; the field rides along, so no table row is read.
CREATE INDEX users_search_name_group ON readmodel.users
    ((substr(search_name, 1, 3) COLLATE "C"), name, id) INCLUDE (search_name)
    WHERE account_type = 'User';
CREATE INDEX users_search_username_group ON readmodel.users
    ((substr(search_username, 1, 3) COLLATE "C"), name, id) INCLUDE (search_username)
    WHERE account_type = 'User' AND search_username IS NOT NULL;
CREATE INDEX users_search_email_group ON readmodel.users
    ((substr(search_email, 1, 3) COLLATE "C"), name, id) INCLUDE (search_email)
    WHERE account_type = 'User' AND search_email IS NOT NULL;

-- Other substring matches (the third tier): everyone in result order with the three fields, for
-- queries that match many people (the first page comes early in the walk) ...
CREATE INDEX users_search_walk ON readmodel.users (name, id)
    INCLUDE (search_name, search_username, search_email)
    WHERE account_type = 'User';
-- ... and trigram indexes for those that match few. fastupdate off: with GIN's pending list,
-- rows written since the last vacuum are scanned one by one on every search (measured: 4 ms of
-- a 4.6 ms search at 100,000 freshly imported users).
CREATE INDEX users_search_name_trgm ON readmodel.users
    USING gin (search_name gin_trgm_ops) WITH (fastupdate = off);
CREATE INDEX users_search_username_trgm ON readmodel.users
    USING gin (search_username gin_trgm_ops) WITH (fastupdate = off);
CREATE INDEX users_search_email_trgm ON readmodel.users
    USING gin (search_email gin_trgm_ops) WITH (fastupdate = off);

-- Inactivity: last sign-in and creation. (Not partial on account_type: nearly every row is a
-- person, and a partial index on it tempts the planner into bitmaps of the whole table.)
CREATE INDEX users_activity_idx ON readmodel.users (seen_at, created_at);

-- Last use of any of an account's tokens, next to its sign-ins: what inactivity is made of.
CREATE VIEW reporting.user_activity AS
    SELECT u.id, u.account_type, u.name, u.username, u.email, u.created_at,
           u.seen_at AS last_sign_in,
           (SELECT max(p.seen_at) FROM readmodel.personal_access_tokens p WHERE p.user_id = u.id)
               AS last_token_use
    FROM readmodel.users u;
