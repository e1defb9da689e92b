-- Read models for projects, environments and feature flags.

CREATE TABLE readmodel.environments (
    name       text NOT NULL,
    type       text NOT NULL,
    sort_order integer NOT NULL,
    created_at timestamptz NOT NULL,
    CONSTRAINT environments_pkey PRIMARY KEY (name)
);

CREATE TABLE readmodel.projects (
    id          text NOT NULL,
    name        text NOT NULL,
    description text,
    created_at  timestamptz NOT NULL,
    archived_at timestamptz,
    CONSTRAINT projects_pkey PRIMARY KEY (id)
);

-- Which environments are enabled in which project. A flag shows one environment entry per row
-- here; per-flag state in those environments (enabled, strategies) joins in by name.
CREATE TABLE readmodel.project_environments (
    project_id  text NOT NULL,
    environment text NOT NULL,
    CONSTRAINT project_environments_pkey PRIMARY KEY (project_id, environment)
);

-- One row per flag ever created, archived ones included: the primary key keeps names unique
-- across all projects and the archive, case-sensitively.
CREATE TABLE readmodel.features (
    name                 text NOT NULL,
    project              text NOT NULL,
    type                 text NOT NULL,
    description          text,
    impression_data      boolean NOT NULL,
    stale                boolean NOT NULL DEFAULT false,
    created_at           timestamptz NOT NULL,
    archived_at          timestamptz,
    lifecycle_stage      text NOT NULL,
    lifecycle_entered_at timestamptz NOT NULL,
    CONSTRAINT features_pkey PRIMARY KEY (name)
);
CREATE INDEX features_project_idx ON readmodel.features (project, name);

CREATE VIEW reporting.features AS
    SELECT f.name, f.project, f.type, f.description, f.impression_data, f.stale,
           f.created_at, f.archived_at, f.archived_at IS NOT NULL AS archived,
           f.lifecycle_stage, f.lifecycle_entered_at
    FROM readmodel.features f;

CREATE VIEW reporting.features_per_project AS
    SELECT p.id AS project, p.name AS project_name, p.archived_at IS NOT NULL AS project_archived,
           count(f.name) FILTER (WHERE f.archived_at IS NULL) AS active_features,
           count(f.name) FILTER (WHERE f.archived_at IS NOT NULL) AS archived_features
    FROM readmodel.projects p
    LEFT JOIN readmodel.features f ON f.project = p.id
    GROUP BY p.id, p.name, p.archived_at;

-- The environments a flag of this project shows, as featureSchema wants them ordered.
CREATE FUNCTION readmodel.project_environments_json(p_project text) RETURNS json
LANGUAGE sql STABLE AS $$
    SELECT coalesce(json_agg(json_build_object(
               'name', e.name, 'type', e.type, 'sortOrder', e.sort_order)
               ORDER BY e.sort_order, e.name), '[]')
    FROM readmodel.project_environments pe
    JOIN readmodel.environments e ON e.name = pe.environment
    WHERE pe.project_id = p_project
$$;
