-- The event log as a product (docs/events.md, "Searching the log"; docs/audit.md):
-- 1. `recorded_at` is taken inside the global section, under the head lock, and never goes
--    back: the log's times then rise with its positions, so "the state at time T" is a prefix
--    of the log (the events recorded at or before T), and a time range is a position range.
-- 2. Columns generated from each event, with indexes, for searching the log newest first by
--    type, project and author (Unleash's /api/admin/search/events) and by time.

-- The head remembers the last time it gave out. '-infinity' before any event.
ALTER TABLE log_head ADD COLUMN recorded_at timestamptz NOT NULL DEFAULT '-infinity';
UPDATE log_head SET recorded_at = coalesce((SELECT max(recorded_at) FROM events), '-infinity');

-- Same arguments as before (the previous release still calls it with its own time, which is
-- now ignored), one more column out: the time the events were recorded at.
DROP FUNCTION eventstore_append(text, text, integer, uuid[], text[], integer[], jsonb[], jsonb,
                                timestamptz);
CREATE FUNCTION eventstore_append(
    p_stream_type text, p_stream_key text, p_first_version integer, p_event_ids uuid[],
    p_types text[], p_schema_versions integer[], p_data jsonb[], p_metadata jsonb,
    p_recorded_at timestamptz
) RETURNS TABLE (out_position bigint, out_hash bytea, out_recorded_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    v_position bigint;
    v_hash bytea;
    v_prev bytea;
    v_recorded_at timestamptz;
    i integer;
BEGIN
    SELECT h.position, h.hash, greatest(clock_timestamp(), h.recorded_at)
      INTO v_position, v_hash, v_recorded_at
      FROM log_head h WHERE h.id = 1 FOR UPDATE;
    FOR i IN 1 .. coalesce(array_length(p_types, 1), 0) LOOP
        v_position := v_position + 1;
        v_prev := v_hash;
        v_hash := sha256(v_prev || convert_to(event_canonical(
            v_position, p_stream_type, p_stream_key, p_first_version + i - 1, p_event_ids[i],
            p_types[i], p_schema_versions[i], p_data[i], p_metadata, v_recorded_at), 'UTF8'));
        INSERT INTO events (position, stream_type, stream_key, stream_version, event_id, type,
                            schema_version, data, metadata, recorded_at, prev_hash, hash)
        VALUES (v_position, p_stream_type, p_stream_key, p_first_version + i - 1, p_event_ids[i],
                p_types[i], p_schema_versions[i], p_data[i], p_metadata, v_recorded_at,
                v_prev, v_hash);
        out_position := v_position;
        out_hash := v_hash;
        out_recorded_at := v_recorded_at;
        RETURN NEXT;
    END LOOP;
    UPDATE log_head SET position = v_position, hash = v_hash, recorded_at = v_recorded_at
    WHERE id = 1;
    PERFORM pg_notify('events', v_position::text);
END;
$$;

-- Unleash's name for what an event records (its event types: feature-created, ...), or the
-- stored type name where Unleash has no such event. The one place this mapping lives.
CREATE FUNCTION event_kind(p_type text, p_data jsonb) RETURNS text
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
        ELSE p_type
    END
$$;

-- The project an event belongs to: a flag's events carry theirs (tag events since this
-- release), a project's stream is the project. Others (accounts, tokens, segments,
-- environments) belong to none, and only ADMIN principals see them in a search.
CREATE FUNCTION event_project(p_stream_type text, p_stream_key text, p_data jsonb)
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE p_stream_type
        WHEN 'feature' THEN p_data ->> 'project'
        WHEN 'project' THEN p_stream_key
    END
$$;

-- Unleash's createdByUserId: the user's or service account's id; -42 for an API token (its
-- ADMIN_TOKEN_USER), -1337 for the system (its SYSTEM_USER_ID); null when the actor id is not
-- `<kind>:<digits>` (never fails: a generated column must not refuse an append).
CREATE FUNCTION event_actor_user_id(p_metadata jsonb) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN p_metadata ->> 'actor_kind' = 'api-token' THEN -42
        WHEN p_metadata ->> 'actor_kind' = 'system' THEN -1337
        WHEN p_metadata ->> 'actor_kind' IN ('user', 'service-account')
             AND split_part(p_metadata ->> 'actor_id', ':', 2) ~ '^[0-9]{1,18}$'
            THEN split_part(p_metadata ->> 'actor_id', ':', 2)::bigint
    END
$$;

-- Rewrites the table once (a few seconds per million events); appends wait meanwhile.
ALTER TABLE events
    ADD COLUMN kind text GENERATED ALWAYS AS (event_kind(type, data)) STORED,
    ADD COLUMN project text GENERATED ALWAYS AS (event_project(stream_type, stream_key, data))
        STORED,
    ADD COLUMN actor_user_id bigint GENERATED ALWAYS AS (event_actor_user_id(metadata)) STORED;

-- A search walks the log newest first through the index of one filter, from a position
-- (eventstore.search); the pairs a search often combines have theirs. Counts read only them.
CREATE INDEX events_kind_position ON events (kind, position);
CREATE INDEX events_project_position ON events (project, position) WHERE project IS NOT NULL;
CREATE INDEX events_project_kind_position ON events (project, kind, position)
    WHERE project IS NOT NULL;
CREATE INDEX events_actor_position ON events (actor_user_id, position);
CREATE INDEX events_actor_kind_position ON events (actor_user_id, kind, position);
CREATE INDEX events_recorded_at_position ON events (recorded_at, position);
