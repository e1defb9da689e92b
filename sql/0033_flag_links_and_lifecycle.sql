-- A flag's links and the stages of its lifecycle (issue 43; events FeatureLinkAdded,
-- FeatureLinkUpdated, FeatureLinkRemoved, FeatureCompleted, FeatureUncompleted;
-- projections/flag_extras.py).
CREATE TABLE readmodel.feature_links (
    id           text NOT NULL,
    feature_name text NOT NULL,
    url          text NOT NULL,
    title        text,
    created_at   timestamptz NOT NULL,
    CONSTRAINT feature_links_pkey PRIMARY KEY (id)
);
CREATE INDEX feature_links_feature ON readmodel.feature_links (feature_name, created_at, id);

-- Since when the flag is at `initial` (its creation or its last revival) and its completion.
CREATE TABLE readmodel.feature_lifecycle (
    feature_name text NOT NULL,
    initial_at   timestamptz NOT NULL,
    status       text,
    status_value text,
    completed_at timestamptz,
    CONSTRAINT feature_lifecycle_pkey PRIMARY KEY (feature_name)
);

-- The flag's first enabling in each environment since its creation or last revival, by the
-- version of its stream that holds it: the event carries no time, and the log's time of that
-- version is the time of the enabling (inline projections never see the log's times).
CREATE TABLE readmodel.feature_first_enabled (
    feature_name   text NOT NULL,
    environment    text NOT NULL,
    stream_version integer NOT NULL,
    CONSTRAINT feature_first_enabled_pkey PRIMARY KEY (feature_name, environment)
);

-- What the projection would have written for the events already in the log (no link or
-- completion exists before this migration): each existing flag's start at `initial` (its last
-- creation or revival) and its first enabling in each environment since then.
WITH starts AS (
    SELECT DISTINCT ON (e.stream_key) e.stream_key, e.stream_version,
           coalesce(e.data ->> 'revived_at', e.data ->> 'created_at')::timestamptz AS at
    FROM events e JOIN readmodel.features f ON f.name = e.stream_key
    WHERE e.stream_type = 'feature' AND e.type IN ('FeatureCreated', 'FeatureCloned', 'FeatureRevived')
    ORDER BY e.stream_key, e.stream_version DESC
), enabled AS (
    INSERT INTO readmodel.feature_first_enabled (feature_name, environment, stream_version)
    SELECT e.stream_key, e.data ->> 'environment', min(e.stream_version)
    FROM events e JOIN starts s ON s.stream_key = e.stream_key
    WHERE e.stream_type = 'feature' AND e.type = 'FeatureEnvironmentEnabled'
      AND e.stream_version > s.stream_version
    GROUP BY e.stream_key, e.data ->> 'environment'
)
INSERT INTO readmodel.feature_lifecycle (feature_name, initial_at)
SELECT stream_key, at FROM starts;

-- event_kind (0032's body) learns Unleash's names of the new types.
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
        ELSE p_type
    END
$$;
