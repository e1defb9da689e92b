-- Read models live in their own schema; the first one: API tokens, looked up by secret hash.
CREATE SCHEMA readmodel;

CREATE SEQUENCE api_token_ids;

CREATE TABLE readmodel.api_tokens (
    id          bigint NOT NULL,
    secret_hash text NOT NULL,
    secret_hint text NOT NULL,
    token_name  text NOT NULL,
    type        text NOT NULL CHECK (type IN ('admin', 'client', 'frontend')),
    environment text NOT NULL,
    projects    text[] NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz,
    CONSTRAINT api_tokens_pkey PRIMARY KEY (id),
    CONSTRAINT api_tokens_secret_hash_key UNIQUE (secret_hash)
);
