-- Segments: reusable constraint sets that strategies reference by id.
CREATE SEQUENCE segment_ids;

CREATE TABLE readmodel.segments (
    id          integer NOT NULL,
    name        text NOT NULL,
    description text,
    constraints jsonb NOT NULL,
    created_at  timestamptz NOT NULL,
    CONSTRAINT segments_pkey PRIMARY KEY (id),
    CONSTRAINT segments_name_key UNIQUE (name)
);
