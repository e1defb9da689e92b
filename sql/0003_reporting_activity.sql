-- Reporting: activity by actor per day, kept by an async projection, exposed as a stable view.
CREATE SCHEMA reporting;

CREATE TABLE readmodel.activity_daily (
    day        date NOT NULL,
    actor_kind text NOT NULL,
    actor_id   text NOT NULL,
    actor_name text NOT NULL,
    events     integer NOT NULL,
    last_position bigint NOT NULL,
    CONSTRAINT activity_daily_pkey PRIMARY KEY (day, actor_kind, actor_id)
);

INSERT INTO projection_checkpoints (name) VALUES ('activity_daily');

CREATE VIEW reporting.activity_by_actor_day AS
    SELECT day, actor_kind, actor_id, actor_name, events
    FROM readmodel.activity_daily;
