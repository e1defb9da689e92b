-- Read models for people and machines: users, service accounts, their personal access tokens,
-- their passwords (hashes) and their sign-in sessions (hashes).

-- Users and service accounts share one id space, as in Unleash; ids are never reused.
CREATE SEQUENCE user_ids;
CREATE SEQUENCE personal_access_token_ids;

CREATE TABLE readmodel.users (
    id             bigint NOT NULL,
    account_type   text NOT NULL CHECK (account_type IN ('User', 'Service Account')),
    name           text,
    username       text,
    email          text,
    root_role      integer NOT NULL,
    login_attempts integer NOT NULL DEFAULT 0,
    seen_at        timestamptz,
    created_at     timestamptz NOT NULL,
    CONSTRAINT users_pkey PRIMARY KEY (id)
);
-- E-mails are stored lower-cased and unique in any case; usernames are unique as written
-- (as in Unleash, "bob" and "BOB" are two accounts).
CREATE UNIQUE INDEX users_email_key ON readmodel.users (lower(email));
CREATE UNIQUE INDEX users_username_key ON readmodel.users (username);

-- Kept apart from `users` so that a reporting query over users never sees a password hash.
CREATE TABLE readmodel.user_passwords (
    user_id       bigint NOT NULL,
    password_hash text NOT NULL,
    CONSTRAINT user_passwords_pkey PRIMARY KEY (user_id)
);

CREATE TABLE readmodel.personal_access_tokens (
    id          bigint NOT NULL,
    user_id     bigint NOT NULL,
    secret_hash text NOT NULL,
    secret_hint text NOT NULL,
    description text NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    seen_at     timestamptz,
    -- The token's API record (patsSchema item), kept by the projection so that a listing
    -- only concatenates: the listing of a service account's tokens is a hot path.
    body        text NOT NULL,
    CONSTRAINT personal_access_tokens_pkey PRIMARY KEY (id),
    CONSTRAINT personal_access_tokens_secret_hash_key UNIQUE (secret_hash)
);
CREATE INDEX personal_access_tokens_user_idx ON readmodel.personal_access_tokens (user_id, id);

CREATE TABLE readmodel.sessions (
    session_hash text NOT NULL,
    user_id      bigint NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    CONSTRAINT sessions_pkey PRIMARY KEY (session_hash)
);
CREATE INDEX sessions_user_idx ON readmodel.sessions (user_id);

-- Reporting: accounts without secrets or hashes. Columns only ever grow.
CREATE VIEW reporting.users AS
    SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role,
           CASE u.root_role WHEN 1 THEN 'Admin' WHEN 2 THEN 'Editor' WHEN 3 THEN 'Viewer' END
               AS root_role_name,
           u.login_attempts, u.seen_at, u.created_at,
           (SELECT count(*) FROM readmodel.personal_access_tokens p WHERE p.user_id = u.id)
               AS tokens
    FROM readmodel.users u;

CREATE VIEW reporting.personal_access_tokens AS
    SELECT p.id, p.user_id, u.account_type, u.username, p.description, p.secret_hint,
           p.created_at, p.expires_at, p.seen_at
    FROM readmodel.personal_access_tokens p
    JOIN readmodel.users u ON u.id = p.user_id;

-- A date-time as the API prints it: UTC, microseconds, `Z`. (Immutable in fact: the zone and
-- the format are fixed, and the format has no locale-dependent field.)
CREATE FUNCTION readmodel.api_time(t timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
$$;

-- spec.md's token record (patsSchema item); `secret` is the masked hint, never the secret.
CREATE FUNCTION readmodel.pat_body(
    p_id bigint, p_secret_hint text, p_created_at timestamptz, p_seen_at timestamptz,
    p_user_id bigint, p_description text, p_expires_at timestamptz
) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT jsonb_build_object(
        'id', p_id, 'secret', p_secret_hint, 'createdAt', readmodel.api_time(p_created_at),
        'seenAt', readmodel.api_time(p_seen_at), 'userId', p_user_id,
        'description', p_description, 'expiresAt', readmodel.api_time(p_expires_at))::text
$$;
