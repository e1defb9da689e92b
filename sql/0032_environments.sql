-- Environments switched on and off for the whole instance (EnvironmentSwitched: Unleash's
-- "deprecated" environments are the ones off), and a project environment's default strategy
-- (DefaultStrategySet; NULL: the built-in gradual rollout to everyone), which switching a flag
-- on without a strategy there adds.
ALTER TABLE readmodel.environments ADD COLUMN enabled boolean NOT NULL DEFAULT true;
ALTER TABLE readmodel.project_environments ADD COLUMN default_strategy jsonb;

-- event_kind (last replaced in 0031) learns Unleash's name of DefaultStrategySet,
-- `default-strategy-updated`; every other type keeps its kind (none of the new types exists
-- before this migration). EnvironmentSwitched and EnvironmentSortOrderSet have no Unleash
-- event (Unleash records none for them): they keep their own names.
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
        ELSE p_type
    END
$$;
