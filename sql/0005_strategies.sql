-- Per-flag, per-environment state: the on/off switch, environment variants, strategies.

CREATE TABLE readmodel.feature_environments (
    feature_name text NOT NULL,
    environment  text NOT NULL,
    enabled      boolean NOT NULL DEFAULT false,
    variants     jsonb NOT NULL DEFAULT '[]',
    CONSTRAINT feature_environments_pkey PRIMARY KEY (feature_name, environment)
);

CREATE TABLE readmodel.feature_strategies (
    id           uuid NOT NULL,
    feature_name text NOT NULL,
    environment  text NOT NULL,
    name         text NOT NULL,
    title        text,
    disabled     boolean NOT NULL,
    sort_order   integer NOT NULL,
    constraints  jsonb NOT NULL,
    parameters   jsonb NOT NULL,
    variants     jsonb NOT NULL,
    segments     integer[] NOT NULL,
    created_at   timestamptz NOT NULL,
    CONSTRAINT feature_strategies_pkey PRIMARY KEY (id)
);
CREATE INDEX feature_strategies_feature_idx
    ON readmodel.feature_strategies (feature_name, environment, sort_order);

-- One strategy as the API shows it.
CREATE FUNCTION readmodel.strategy_json(s readmodel.feature_strategies)
RETURNS json LANGUAGE sql STABLE AS $$
    SELECT json_build_object(
        'id', s.id, 'name', s.name, 'title', s.title, 'disabled', s.disabled,
        'featureName', s.feature_name, 'sortOrder', s.sort_order, 'segments', s.segments,
        'constraints', s.constraints, 'variants', s.variants, 'parameters', s.parameters)
$$;

-- A flag's environments as featureSchema shows them: one per environment of its project, with
-- the flag's switch, variants and strategies there (strategies in sortOrder, then age).
CREATE FUNCTION readmodel.feature_environments_json(p_feature text, p_project text)
RETURNS json LANGUAGE sql STABLE AS $$
    SELECT coalesce(json_agg(json_build_object(
        'name', e.name, 'type', e.type, 'sortOrder', e.sort_order,
        'enabled', coalesce(fe.enabled, false),
        'variants', coalesce(fe.variants, '[]'::jsonb),
        'strategies', coalesce((
            SELECT json_agg(readmodel.strategy_json(s) ORDER BY s.sort_order, s.created_at, s.id)
            FROM readmodel.feature_strategies s
            WHERE s.feature_name = p_feature AND s.environment = e.name), '[]'::json)
        ) ORDER BY e.sort_order, e.name), '[]')
    FROM readmodel.project_environments pe
    JOIN readmodel.environments e ON e.name = pe.environment
    LEFT JOIN readmodel.feature_environments fe
        ON fe.feature_name = p_feature AND fe.environment = e.name
    WHERE pe.project_id = p_project
$$;
