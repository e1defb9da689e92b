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
