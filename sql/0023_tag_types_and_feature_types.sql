-- Tag types, the tags that exist as values of one (whether or not a flag carries them), and
-- feature types with their expected lifetime: read models of the tag-type and feature-type
-- streams (projections/tag_types.py, projections/feature_types.py).
CREATE TABLE readmodel.tag_types (
    name        text NOT NULL,
    description text,
    icon        text,
    color       text,
    created_at  timestamptz NOT NULL,
    CONSTRAINT tag_types_pkey PRIMARY KEY (name)
);

CREATE TABLE readmodel.tags (
    type  text NOT NULL,
    value text NOT NULL,
    CONSTRAINT tags_pkey PRIMARY KEY (type, value)
);

CREATE TABLE readmodel.feature_types (
    id            text NOT NULL,
    name          text NOT NULL,
    description   text NOT NULL,
    lifetime_days integer,
    sort_order    integer NOT NULL,
    CONSTRAINT feature_types_pkey PRIMARY KEY (id)
);

-- Every tag ever put on a flag exists as a tag (as a rebuild from the log makes the table):
-- the log's tag events before this table existed. Tag values are never sealed.
INSERT INTO readmodel.tags (type, value)
SELECT e.data ->> 'tag_type', e.data ->> 'value' FROM events e WHERE e.type = 'FeatureTagged'
UNION
SELECT t ->> 'tag_type', t ->> 'value'
FROM events e, jsonb_array_elements(e.data -> 'tags') t
WHERE e.type = 'FeatureCloned'
ON CONFLICT DO NOTHING;

-- Unleash's names of the new events, for the event log's `type` and its search (the five
-- lines before ELSE are new; FeatureTypeDefined has no counterpart: Unleash's types come from
-- its migrations).
CREATE OR REPLACE FUNCTION event_kind(p_type text, p_data jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE p_type
        WHEN 'FeatureCreated' THEN 'feature-created'
        WHEN 'FeatureCloned' THEN 'feature-created'
        WHEN 'FeatureArchived' THEN 'feature-archived'
        WHEN 'FeatureRevived' THEN 'feature-revived'
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
        ELSE p_type
    END
$$;
