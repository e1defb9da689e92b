-- User search at a million users: trigram indexes for case-insensitive substring matches on
-- name, username and e-mail (pg_trgm is a trusted extension: a database owner may create it).
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE INDEX users_name_trgm ON readmodel.users USING gin (lower(name) gin_trgm_ops);
CREATE INDEX users_username_trgm ON readmodel.users USING gin (lower(username) gin_trgm_ops);
CREATE INDEX users_email_trgm ON readmodel.users USING gin (lower(email) gin_trgm_ops);
-- Inactivity: last sign-in and creation, for people only.
CREATE INDEX users_activity_idx ON readmodel.users (seen_at, created_at)
    WHERE account_type = 'User';

-- Last use of any of an account's tokens, next to its sign-ins: what inactivity is made of.
CREATE VIEW reporting.user_activity AS
    SELECT u.id, u.account_type, u.name, u.username, u.email, u.created_at,
           u.seen_at AS last_sign_in,
           (SELECT max(p.seen_at) FROM readmodel.personal_access_tokens p WHERE p.user_id = u.id)
               AS last_token_use
    FROM readmodel.users u;
