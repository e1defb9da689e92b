"""Read SQL of the instance's settings and of its usage statistics."""

from __future__ import annotations

MAINTENANCE = "SELECT enabled FROM maintenance_mode WHERE id = 'maintenance.mode'"
# Changes of maintenance mode queue on its row, once there is one.
LOCK_MAINTENANCE = MAINTENANCE + " FOR UPDATE"
ORIGINS = "SELECT frontend_api_origins FROM frontend_settings WHERE id = 'unleash.frontend'"
LOCK_ORIGINS = ORIGINS + " FOR UPDATE"

# Every count of the statistics in one snapshot of the read models (Unleash's
# instance-stats-service, each count as it defines it). People are users; an account is
# active within N days when it or one of its personal access tokens was seen then.
STATISTICS = """
WITH seen AS (
    SELECT u.id, greatest(u.seen_at, max(t.seen_at)) AS at
    FROM users u LEFT JOIN personal_access_tokens t ON t.user_id = u.id
    WHERE u.account_type = 'User'
    GROUP BY u.id, u.seen_at
), per_environment AS (
    SELECT count(*) AS n FROM feature_strategies GROUP BY feature_name, environment
)
SELECT
    (SELECT count(*) FROM users WHERE account_type = 'User') AS users,
    (SELECT count(*) FROM users WHERE account_type = 'Service Account') AS service_accounts,
    (SELECT coalesce(jsonb_object_agg(type, n ORDER BY type), '{}'::jsonb)::text
     FROM (SELECT type, count(*) AS n FROM api_tokens GROUP BY type) t) AS api_tokens,
    (SELECT count(*) FROM seen WHERE at > now() - interval '7 days') AS active_7,
    (SELECT count(*) FROM seen WHERE at > now() - interval '30 days') AS active_30,
    (SELECT count(*) FROM seen WHERE at > now() - interval '60 days') AS active_60,
    (SELECT count(*) FROM seen WHERE at > now() - interval '90 days') AS active_90,
    (SELECT count(*) FROM features WHERE archived_at IS NULL) AS flags,
    (SELECT count(*) FROM features WHERE archived_at IS NOT NULL) AS archived_flags,
    (SELECT count(*) FROM projects WHERE archived_at IS NULL) AS projects,
    (SELECT array_agg(name) FROM context_fields) AS context_fields,
    (SELECT count(*) FROM environments) AS environments,
    (SELECT count(*) FROM segments) AS segments,
    (SELECT count(*) FROM strategy_definitions) AS custom_strategies,
    (SELECT count(DISTINCT app_name) FROM telemetry.client_instances
     WHERE last_seen > now() - interval '7 days') AS apps_7,
    (SELECT count(DISTINCT app_name) FROM telemetry.client_instances
     WHERE last_seen > now() - interval '30 days') AS apps_30,
    (SELECT count(DISTINCT app_name) FROM telemetry.client_instances) AS apps_all,
    (SELECT count(*) FROM telemetry.client_metrics_hourly
     WHERE hour >= date_trunc('day', now(), 'UTC') - interval '1 day'
       AND hour < date_trunc('day', now(), 'UTC')) AS enabled_buckets,
    (SELECT count(*) FROM telemetry.client_metrics_hourly
     WHERE hour >= date_trunc('day', now(), 'UTC') - interval '1 day'
       AND hour < date_trunc('day', now(), 'UTC') AND variants <> '{}'::jsonb) AS variant_buckets,
    (SELECT coalesce(max(n), 0) FROM per_environment) AS max_environment_strategies,
    (SELECT coalesce(max(jsonb_array_length(c -> 'values')), 0)
     FROM feature_strategies s, jsonb_array_elements(s.constraints) c
     WHERE jsonb_typeof(c -> 'values') = 'array') AS max_constraint_values,
    (SELECT coalesce(max(jsonb_array_length(constraints)), 0) FROM feature_strategies)
        AS max_constraints
"""
