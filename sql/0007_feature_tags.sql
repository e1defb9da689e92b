-- Tags on flags: (type, value) pairs, unique per flag.
CREATE TABLE readmodel.feature_tags (
    feature_name text NOT NULL,
    type         text NOT NULL,
    value        text NOT NULL,
    created_at   timestamptz NOT NULL,
    CONSTRAINT feature_tags_pkey PRIMARY KEY (feature_name, type, value)
);

CREATE FUNCTION readmodel.feature_tags_json(p_feature text) RETURNS json
LANGUAGE sql STABLE AS $$
    SELECT coalesce(json_agg(json_build_object('value', t.value, 'type', t.type)
                             ORDER BY t.type, t.value), '[]')
    FROM readmodel.feature_tags t WHERE t.feature_name = p_feature
$$;
