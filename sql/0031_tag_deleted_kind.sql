-- Deleting a tag records `TagDeleted`, which Unleash calls `tag-deleted` (issue 43, the event
-- log's slice): event_kind (last replaced in 0030) learns that name. Every other type keeps its
-- kind, so the kinds stored before stay what the function gives (`verify` compares them); no
-- event of the new type exists before this migration. A later migration that replaces
-- event_kind starts from this body.
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
        ELSE p_type
    END
$$;
