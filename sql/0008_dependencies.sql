-- Parent dependencies between flags of one project (one level: a parent has no parent).
CREATE TABLE readmodel.feature_dependencies (
    child    text NOT NULL,
    parent   text NOT NULL,
    enabled  boolean NOT NULL,
    variants jsonb NOT NULL,
    CONSTRAINT feature_dependencies_pkey PRIMARY KEY (child, parent)
);
CREATE INDEX feature_dependencies_parent_idx ON readmodel.feature_dependencies (parent);

CREATE FUNCTION readmodel.feature_dependencies_json(p_feature text) RETURNS json
LANGUAGE sql STABLE AS $$
    SELECT coalesce(json_agg(json_build_object(
               'feature', d.parent, 'enabled', d.enabled, 'variants', d.variants)
               ORDER BY d.parent), '[]')
    FROM readmodel.feature_dependencies d WHERE d.child = p_feature
$$;

CREATE FUNCTION readmodel.feature_children_json(p_feature text) RETURNS json
LANGUAGE sql STABLE AS $$
    SELECT coalesce(json_agg(d.child ORDER BY d.child), '[]')
    FROM readmodel.feature_dependencies d WHERE d.parent = p_feature
$$;
