-- The instance's own settings, set through the admin API (projections/instance_settings.py):
-- maintenance mode and the frontend API's CORS origins, one row each once set, keyed by
-- Unleash's setting ids. No row: maintenance is off and FRONTEND_API_ORIGINS holds.
CREATE TABLE readmodel.maintenance_mode (
    id      text NOT NULL,
    enabled boolean NOT NULL,
    CONSTRAINT maintenance_mode_pkey PRIMARY KEY (id),
    CONSTRAINT maintenance_mode_id_check CHECK (id = 'maintenance.mode')
);

CREATE TABLE readmodel.frontend_settings (
    id                   text NOT NULL,
    frontend_api_origins text[] NOT NULL,
    CONSTRAINT frontend_settings_pkey PRIMARY KEY (id),
    CONSTRAINT frontend_settings_id_check CHECK (id = 'unleash.frontend')
);

-- Unleash records a change of either setting as `setting-updated` (`setting-created` the first
-- time; here every change is `setting-updated`: docs/behavior.md). The two lines before ELSE
-- that name them are new; the rest is 0029's body. No event of the new types exists before this migration.
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
        ELSE p_type
    END
$$;
