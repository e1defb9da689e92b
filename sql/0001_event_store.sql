-- The event store: the only source of truth. Append-only; positions dense and in commit order.

CREATE TABLE streams (
    stream_type text NOT NULL,
    stream_key  text NOT NULL,
    version     integer NOT NULL CHECK (version >= 1),
    CONSTRAINT streams_pkey PRIMARY KEY (stream_type, stream_key)
);

CREATE TABLE events (
    position       bigint NOT NULL,
    stream_type    text NOT NULL,
    stream_key     text NOT NULL,
    stream_version integer NOT NULL CHECK (stream_version >= 1),
    event_id       uuid NOT NULL,
    type           text NOT NULL,
    schema_version integer NOT NULL CHECK (schema_version >= 1),
    data           jsonb NOT NULL,
    metadata       jsonb NOT NULL,
    recorded_at    timestamptz NOT NULL,
    prev_hash      bytea NOT NULL,
    hash           bytea NOT NULL,
    CONSTRAINT events_pkey PRIMARY KEY (position),
    CONSTRAINT events_stream_version_key UNIQUE (stream_type, stream_key, stream_version),
    CONSTRAINT events_event_id_key UNIQUE (event_id)
);

-- The single counter row: holding its lock is the global section that numbers events.
CREATE TABLE log_head (
    id       smallint NOT NULL CHECK (id = 1),
    position bigint NOT NULL,
    hash     bytea NOT NULL,
    CONSTRAINT log_head_pkey PRIMARY KEY (id)
);
INSERT INTO log_head (id, position, hash) VALUES (1, 0, decode(repeat('00', 32), 'hex'));

CREATE FUNCTION events_reject_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the event log is append-only: % on events is not allowed', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER events_append_only
    BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION events_reject_change();

CREATE TRIGGER events_no_truncate
    BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_reject_change();

-- The text that an event's hash covers: a JSON array in PostgreSQL's canonical jsonb output.
CREATE FUNCTION event_canonical(
    p_position bigint, p_stream_type text, p_stream_key text, p_stream_version integer,
    p_event_id uuid, p_type text, p_schema_version integer, p_data jsonb, p_metadata jsonb,
    p_recorded_at timestamptz
) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_array(
        p_position, p_stream_type, p_stream_key, p_stream_version, p_event_id::text, p_type,
        p_schema_version, p_data, p_metadata,
        to_char(p_recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
    )::text
$$;

-- The global section: lock the head, number and chain the events, insert them, move the head.
-- Call it last in the transaction, right before COMMIT, so the head lock is held briefly.
CREATE FUNCTION eventstore_append(
    p_stream_type text, p_stream_key text, p_first_version integer, p_event_ids uuid[],
    p_types text[], p_schema_versions integer[], p_data jsonb[], p_metadata jsonb,
    p_recorded_at timestamptz
) RETURNS TABLE (out_position bigint, out_hash bytea)
LANGUAGE plpgsql AS $$
DECLARE
    v_position bigint;
    v_hash bytea;
    v_prev bytea;
    i integer;
BEGIN
    SELECT h.position, h.hash INTO v_position, v_hash FROM log_head h WHERE h.id = 1 FOR UPDATE;
    FOR i IN 1 .. coalesce(array_length(p_types, 1), 0) LOOP
        v_position := v_position + 1;
        v_prev := v_hash;
        v_hash := sha256(v_prev || convert_to(event_canonical(
            v_position, p_stream_type, p_stream_key, p_first_version + i - 1, p_event_ids[i],
            p_types[i], p_schema_versions[i], p_data[i], p_metadata, p_recorded_at), 'UTF8'));
        INSERT INTO events (position, stream_type, stream_key, stream_version, event_id, type,
                            schema_version, data, metadata, recorded_at, prev_hash, hash)
        VALUES (v_position, p_stream_type, p_stream_key, p_first_version + i - 1, p_event_ids[i],
                p_types[i], p_schema_versions[i], p_data[i], p_metadata, p_recorded_at,
                v_prev, v_hash);
        out_position := v_position;
        out_hash := v_hash;
        RETURN NEXT;
    END LOOP;
    UPDATE log_head SET position = v_position, hash = v_hash WHERE id = 1;
    PERFORM pg_notify('events', v_position::text);
END;
$$;

-- Async projections: one row each; a runner owns a row by locking it (FOR UPDATE SKIP LOCKED).
CREATE TABLE projection_checkpoints (
    name       text NOT NULL,
    position   bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT projection_checkpoints_pkey PRIMARY KEY (name)
);
