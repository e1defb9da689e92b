-- Integrations, Unleash's addons (events AddonCreated, AddonUpdated, AddonDeleted;
-- projections/addons.py), and their delivery from the log (service/addons/delivery.py).
CREATE SEQUENCE addon_ids;

-- The read model: each integration's configuration. `sealed` holds its secret parameters
-- encrypted with its key (addon_keys); `parameters` the plain ones.
CREATE TABLE readmodel.addons (
    id           bigint NOT NULL,
    provider     text NOT NULL,
    description  text,
    enabled      boolean NOT NULL,
    parameters   jsonb NOT NULL,
    sealed       jsonb NOT NULL,
    events       text[] NOT NULL,
    projects     text[] NOT NULL,
    environments text[] NOT NULL,
    created_at   timestamptz NOT NULL,
    CONSTRAINT addons_pkey PRIMARY KEY (id)
);

-- Each integration's data key, wrapped by the master key (`master_id` names which): not a
-- read model, and not in the log. Deleting an integration deletes its key, so what the log
-- holds of its secrets can no longer be opened.
CREATE TABLE addon_keys (
    addon_id  bigint NOT NULL,
    master_id text NOT NULL,
    wrapped   bytea NOT NULL,
    CONSTRAINT addon_keys_pkey PRIMARY KEY (addon_id)
);

-- Delivery state (not a read model: replay never touches it). One row per integration: the
-- last log position it has dealt with (delivered, refused or given up), and the retry state of
-- the next event. Whoever holds the integration's advisory lock delivers for it.
CREATE TABLE addon_checkpoints (
    addon_id        bigint NOT NULL,
    position        bigint NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    failing_since   timestamptz,
    next_attempt_at timestamptz,
    last_error      text,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT addon_checkpoints_pkey PRIMARY KEY (addon_id)
);

-- What each integration sent and what came back (Unleash's integration events): one row per
-- attempt. Trimmed to the newest rows per integration. No personal data: the event is named by
-- its position and read from the log when shown (so an erased person reads "[erased]"), and
-- `details` keeps only the request's URL (secrets masked), content type and size.
CREATE TABLE addon_deliveries (
    id            bigserial NOT NULL,
    addon_id      bigint NOT NULL,
    position      bigint NOT NULL,
    attempt       integer NOT NULL,
    state         text NOT NULL,
    state_details text NOT NULL,
    details       jsonb NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT addon_deliveries_pkey PRIMARY KEY (id)
);
CREATE INDEX addon_deliveries_addon ON addon_deliveries (addon_id, id DESC);

-- event_kind (last in 0034) learns Unleash's names of the new types; no event of these types
-- exists before this migration.
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
        WHEN 'MaintenanceModeSet' THEN 'setting-updated'
        WHEN 'FrontendApiOriginsSet' THEN 'setting-updated'
        WHEN 'TagDeleted' THEN 'tag-deleted'
        WHEN 'DefaultStrategySet' THEN 'default-strategy-updated'
        WHEN 'FeatureLinkAdded' THEN 'feature-link-added'
        WHEN 'FeatureLinkUpdated' THEN 'feature-link-updated'
        WHEN 'FeatureLinkRemoved' THEN 'feature-link-removed'
        WHEN 'FeatureCompleted' THEN 'feature-completed'
        WHEN 'FeatureUncompleted' THEN 'feature-uncompleted'
        WHEN 'ApplicationCreated' THEN 'application-created'
        WHEN 'AddonCreated' THEN 'addon-config-created'
        WHEN 'AddonUpdated' THEN 'addon-config-updated'
        WHEN 'AddonDeleted' THEN 'addon-config-deleted'
        ELSE p_type
    END
$$;
