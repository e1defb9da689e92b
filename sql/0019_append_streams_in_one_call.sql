-- A transaction's appends in one call of the global section (issue 18).
--
-- A group-committed batch of inactive-user deletions appends one stream a request (about five
-- a batch at concurrency 16), and its COMMIT message called eventstore_append once a stream:
-- each call locked the log's head again, inserted its events one statement each, moved the
-- head and notified. pg_stat_statements in a 16-connection delete run on this project's machine:
-- 321 us a call under the head lock, of which two one-row INSERTs 56 us each, the head's lock
-- 57 us and its update 15 us; the rest was the call itself. The head lock is what the batches
-- of both lanes queue for.
--
-- eventstore_append_streams does what those calls did one after the other, in one: the head
-- locked once, the events numbered and hash-chained in order (stream after stream, each
-- stream's time taken when its turn comes and never before the head's, as each call took it),
-- inserted in one statement, the head moved once, one notification. The rows are the ones the
-- calls one after the other would have written.
--
-- eventstore_append stays: the appends outside a store transaction use it, and so do the
-- replicas of the version before while a rolling upgrade replaces them (both take the head
-- lock, so the log stays one chain). No table or index is touched.

-- p_counts: each stream's number of events; the event arrays hold the streams' events one
-- stream after the other. Returns the position of the last event (0 when given none).
CREATE FUNCTION eventstore_append_streams(
    p_stream_types text[], p_stream_keys text[], p_first_versions integer[], p_counts integer[],
    p_metadata jsonb[], p_event_ids uuid[], p_types text[], p_schema_versions integer[],
    p_data jsonb[]
) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_position bigint;
    v_first bigint;
    v_hash bytea;
    v_recorded_at timestamptz;
    v_streams integer[] := '{}';
    v_versions integer[] := '{}';
    v_times timestamptz[] := '{}';
    v_prevs bytea[] := '{}';
    v_hashes bytea[] := '{}';
    e integer := 0;
    s integer;
    j integer;
BEGIN
    IF coalesce(array_length(p_event_ids, 1), 0) = 0 THEN
        RETURN 0;
    END IF;
    IF array_length(p_event_ids, 1) IS DISTINCT FROM (SELECT sum(c) FROM unnest(p_counts) c)
       OR array_length(p_types, 1) IS DISTINCT FROM array_length(p_event_ids, 1)
       OR array_length(p_schema_versions, 1) IS DISTINCT FROM array_length(p_event_ids, 1)
       OR array_length(p_data, 1) IS DISTINCT FROM array_length(p_event_ids, 1) THEN
        RAISE EXCEPTION 'eventstore_append_streams: the event arrays do not match the counts';
    END IF;
    SELECT h.position, h.hash, h.recorded_at INTO v_position, v_hash, v_recorded_at
      FROM log_head h WHERE h.id = 1 FOR UPDATE;
    v_first := v_position + 1;
    FOR s IN 1 .. coalesce(array_length(p_counts, 1), 0) LOOP
        v_recorded_at := greatest(clock_timestamp(), v_recorded_at);
        FOR j IN 1 .. p_counts[s] LOOP
            e := e + 1;
            v_position := v_position + 1;
            v_streams[e] := s;
            v_versions[e] := p_first_versions[s] + j - 1;
            v_times[e] := v_recorded_at;
            v_prevs[e] := v_hash;
            v_hash := sha256(v_hash || convert_to(event_canonical(
                v_position, p_stream_types[s], p_stream_keys[s], v_versions[e], p_event_ids[e],
                p_types[e], p_schema_versions[e], p_data[e], p_metadata[s], v_recorded_at),
                'UTF8'));
            v_hashes[e] := v_hash;
        END LOOP;
    END LOOP;
    INSERT INTO events (position, stream_type, stream_key, stream_version, event_id, type,
                        schema_version, data, metadata, recorded_at, prev_hash, hash,
                        kind, project, actor_user_id)
    SELECT v_first + x.n - 1, p_stream_types[x.s], p_stream_keys[x.s], x.version, x.event_id,
           x.type, x.schema_version, x.data, p_metadata[x.s], x.recorded_at, x.prev, x.hash,
           event_kind(x.type, x.data),
           event_project(p_stream_types[x.s], p_stream_keys[x.s], x.data),
           event_actor_user_id(p_metadata[x.s])
    FROM unnest(v_streams, v_versions, p_event_ids, p_types, p_schema_versions, p_data,
                v_times, v_prevs, v_hashes)
         WITH ORDINALITY AS x (s, version, event_id, type, schema_version, data, recorded_at,
                               prev, hash, n)
    ORDER BY x.n;
    UPDATE log_head SET position = v_position, hash = v_hash, recorded_at = v_recorded_at
    WHERE id = 1;
    PERFORM pg_notify('events', v_position::text);
    RETURN v_position;
END;
$$;
