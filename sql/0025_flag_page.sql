-- A flag's page in Unleash's UI (issue 42): who created and who changed each flag, and
-- Unleash's names for the two new event types.

-- One row per flag and author (projections/collaborators.py): Unleash's user id (an account's,
-- -42 for an API token, -1337 for the system); a token's or the system's name (never a person's,
-- which the users read model holds); whether that author created the flag; the stream version
-- of their latest event on it (the order of `collaborators`, latest first).
CREATE TABLE readmodel.feature_collaborators (
    feature_name text NOT NULL,
    user_id      bigint NOT NULL,
    actor_name   text,
    created      boolean NOT NULL,
    last_version integer NOT NULL,
    CONSTRAINT feature_collaborators_pkey PRIMARY KEY (feature_name, user_id)
);

-- What the projection would have written for the events already in the log: each flag's
-- events since it was (last) created, by author; a token's name is the first one seen.
INSERT INTO readmodel.feature_collaborators
    (feature_name, user_id, actor_name, created, last_version)
SELECT e.stream_key, e.actor_user_id,
       CASE WHEN e.actor_user_id < 0
            THEN (array_agg(e.metadata ->> 'actor_name' ORDER BY e.stream_version))[1] END,
       bool_or(e.stream_version = c.created_version),
       max(e.stream_version)
FROM events e
JOIN (SELECT stream_key, max(stream_version) AS created_version FROM events
      WHERE stream_type = 'feature' AND type IN ('FeatureCreated', 'FeatureCloned')
      GROUP BY stream_key) c ON c.stream_key = e.stream_key
WHERE e.stream_type = 'feature' AND e.stream_version >= c.created_version
  AND e.actor_user_id IS NOT NULL
GROUP BY e.stream_key, e.actor_user_id;

-- As in 0023, and FeatureUpdated and StrategiesReordered under Unleash's names (no stored
-- event has these types yet, so no stored `kind` changes).
CREATE OR REPLACE FUNCTION event_kind(p_type text, p_data jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
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
        WHEN 'FeatureUpdated' THEN 'feature-metadata-updated'
        WHEN 'StrategiesReordered' THEN 'strategy-order-changed'
        ELSE p_type
    END
$$;
