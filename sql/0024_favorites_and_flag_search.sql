-- Favourites: the flags and projects each person marked (projections/favorites.py). No foreign
-- keys (read-model tables have none: a rebuild loads them in any order); a person's rows leave
-- with the person, and a flag's or project's stay while it is archived.
CREATE TABLE readmodel.favorite_features (
    user_id      integer NOT NULL,
    feature_name text NOT NULL,
    CONSTRAINT favorite_features_pkey PRIMARY KEY (user_id, feature_name)
);
CREATE TABLE readmodel.favorite_projects (
    user_id    integer NOT NULL,
    project_id text NOT NULL,
    CONSTRAINT favorite_projects_pkey PRIMARY KEY (user_id, project_id)
);

-- Who created each flag, as Unleash's createdByUserId (projections/search.py): the flag
-- table's createdBy filter and column, and a project's flag creators.
CREATE TABLE readmodel.feature_creators (
    feature_name text NOT NULL,
    user_id      integer,
    CONSTRAINT feature_creators_pkey PRIMARY KEY (feature_name)
);
CREATE INDEX feature_creators_user_idx ON readmodel.feature_creators (user_id);

-- The flag table (GET /api/admin/search/features) pages the active flags of a project in
-- creation order, and counts them: both walk this index (its first page, forwards or
-- backwards, and the count, reading the index alone), not the project's whole table.
CREATE INDEX features_project_created_idx ON readmodel.features (project, created_at)
    WHERE archived_at IS NULL;
-- The same across every project (the flags overview page).
CREATE INDEX features_created_idx ON readmodel.features (created_at) WHERE archived_at IS NULL;


-- Each project's events per UTC day and the time of its last one (projections/project_activity.py,
-- async): a project's lastUpdatedAt and its activity by date.
CREATE TABLE readmodel.project_activity_daily (
    project_id    text NOT NULL,
    day           date NOT NULL,
    events        integer NOT NULL,
    last_at       timestamptz NOT NULL,
    last_position bigint NOT NULL,
    CONSTRAINT project_activity_daily_pkey PRIMARY KEY (project_id, day)
);
INSERT INTO projection_checkpoints (name) VALUES ('project_activity');
