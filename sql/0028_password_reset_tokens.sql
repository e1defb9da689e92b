-- Reset links an admin made (event PasswordResetRequested; projections/accounts.py): each by
-- the sha256 of its token, never the token, with the person it resets and its expiry. A new
-- password (PasswordChanged), a newer link of the person, or the account's deletion removes it.
CREATE TABLE readmodel.password_reset_tokens (
    token_hash text NOT NULL,
    user_id    bigint NOT NULL,
    expires_at timestamptz NOT NULL,
    CONSTRAINT password_reset_tokens_pkey PRIMARY KEY (token_hash)
);
CREATE INDEX password_reset_tokens_user_id ON readmodel.password_reset_tokens (user_id);
