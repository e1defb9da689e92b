-- Invite links (Unleash's public signup tokens; events InviteLinkCreated, InviteLinkUpdated,
-- InviteLinkUsed; projections/invite_links.py) and the expiry of API tokens
-- (ApiTokenExpiryChanged). A link is found by the sha256 of its secret only: the secret itself
-- is shown once, in the answer that creates the link (docs/behavior.md, "Invite links").
CREATE SEQUENCE invite_link_ids;

CREATE TABLE readmodel.invite_links (
    id              bigint NOT NULL,
    secret_hash     text NOT NULL,
    secret_hint     text NOT NULL,
    name            text NOT NULL,
    root_role       integer NOT NULL,
    enabled         boolean NOT NULL,
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    -- Who made it, as Unleash's user id (an account's id, -42 an API token, -1337 the system);
    -- a token's or the system's name, never a person's (the users read model has theirs).
    created_by_id   bigint,
    created_by_name text,
    CONSTRAINT invite_links_pkey PRIMARY KEY (id),
    CONSTRAINT invite_links_secret_hash_key UNIQUE (secret_hash)
);

-- The people who signed up through a link; a deleted account drops out through the join.
CREATE TABLE readmodel.invite_link_users (
    link_id bigint NOT NULL,
    user_id bigint NOT NULL,
    CONSTRAINT invite_link_users_pkey PRIMARY KEY (link_id, user_id)
);

-- event_kind (last in 0026) learns Unleash's names of the new types; every other type keeps
-- its kind, and no event of these types exists before this migration.
CREATE OR REPLACE FUNCTION event_kind(p_type text, p_data jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE p_type
        WHEN 'FeatureCreated' THEN 'feature-created'
        WHEN 'FeatureCloned' THEN 'feature-created'
        WHEN 'FeatureArchived' THEN 'feature-archived'
        WHEN 'FeatureRevived' THEN 'feature-revived'
        WHEN 'FeatureDeleted' THEN 'feature-deleted'
        WHEN 'FeatureStaleSet' THEN
            CASE WHEN p_data -> 'stale' = 'true'::jsonb THEN 'feature-stale-on'
                 ELSE 'feature-stale-off' END
        WHEN 'StrategyAdded' THEN 'feature-strategy-add'
        WHEN 'StrategyUpdated' THEN 'feature-strategy-update'
        WHEN 'StrategyRemoved' THEN 'feature-strategy-remove'
        WHEN 'FeatureEnvironmentEnabled' THEN 'feature-environment-enabled'
        WHEN 'FeatureEnvironmentDisabled' THEN 'feature-environment-disabled'
        WHEN 'EnvironmentVariantsSet' THEN 'feature-environment-variants-updated'
        WHEN 'FeatureTagged' THEN 'feature-tagged'
        WHEN 'FeatureUntagged' THEN 'feature-untagged'
        WHEN 'DependencyAdded' THEN 'feature-dependency-added'
        WHEN 'DependencyRemoved' THEN 'feature-dependency-removed'
        WHEN 'SegmentCreated' THEN 'segment-created'
        WHEN 'SegmentUpdated' THEN 'segment-updated'
        WHEN 'SegmentDeleted' THEN 'segment-deleted'
        WHEN 'ProjectCreated' THEN 'project-created'
        WHEN 'ProjectArchived' THEN 'project-archived'
        WHEN 'ProjectEnvironmentEnabled' THEN 'project-environment-added'
        WHEN 'ProjectEnvironmentDisabled' THEN 'project-environment-removed'
        WHEN 'EnvironmentCreated' THEN 'environment-created'
        WHEN 'ApiTokenCreated' THEN 'api-token-created'
        WHEN 'ApiTokenDeleted' THEN 'api-token-deleted'
        WHEN 'UserCreated' THEN 'user-created'
        WHEN 'UserUpdated' THEN 'user-updated'
        WHEN 'UserDeleted' THEN 'user-deleted'
        WHEN 'ServiceAccountCreated' THEN 'service-account-created'
        WHEN 'ServiceAccountUpdated' THEN 'service-account-updated'
        WHEN 'ServiceAccountDeleted' THEN 'service-account-deleted'
        WHEN 'PersonalAccessTokenCreated' THEN 'pat-created'
        WHEN 'PersonalAccessTokenDeleted' THEN 'pat-deleted'
        WHEN 'TagTypeCreated' THEN 'tag-type-created'
        WHEN 'TagTypeUpdated' THEN 'tag-type-updated'
        WHEN 'TagTypeDeleted' THEN 'tag-type-deleted'
        WHEN 'TagCreated' THEN 'tag-created'
        WHEN 'FeatureTypeLifetimeChanged' THEN 'feature-type-updated'
        WHEN 'FeatureUpdated' THEN 'feature-metadata-updated'
        WHEN 'StrategiesReordered' THEN 'strategy-order-changed'
        WHEN 'ApiTokenExpiryChanged' THEN 'api-token-updated'
        WHEN 'InviteLinkCreated' THEN 'public-signup-token-created'
        WHEN 'InviteLinkUpdated' THEN 'public-signup-token-updated'
        WHEN 'InviteLinkUsed' THEN 'public-signup-token-user-added'
        ELSE p_type
    END
$$;
