"""Read SQL of applications: the read model `applications` (what people said of each) beside
schema `telemetry` (what SDKs report: instances and hourly counts). An application is there
when either knows it."""

from __future__ import annotations

# Every application's name with what is said of it and what its instances report: described
# ones and those with instances. strategies: those of its latest registration (Unleash keeps
# one list per application, the last one an SDK sent).
_APPLICATIONS = """
WITH known AS (
    SELECT app_name FROM applications
    UNION SELECT DISTINCT app_name FROM telemetry.client_instances
)
SELECT k.app_name, a.description, a.url, a.color, a.icon,
       least(a.created_at, i.first_seen) AS created_at,
       greatest(a.updated_at, i.registered_at) AS updated_at,
       i.first_seen IS NOT NULL AS reported,
       coalesce(s.strategies, '{}') AS strategies,
       coalesce(u.usage, '[]') AS usage
FROM known k
LEFT JOIN applications a ON a.app_name = k.app_name
LEFT JOIN LATERAL (
    SELECT min(first_seen) AS first_seen, max(registered_at) AS registered_at
    FROM telemetry.client_instances WHERE app_name = k.app_name
) i ON true
LEFT JOIN LATERAL (
    SELECT strategies FROM telemetry.client_instances
    WHERE app_name = k.app_name AND registered_at IS NOT NULL
    ORDER BY registered_at DESC, instance_id LIMIT 1
) s ON true
LEFT JOIN LATERAL (
    SELECT json_agg(json_build_object('project', project, 'environments', environments)
                    ORDER BY project)::text AS usage
    FROM (SELECT p.project, array_agg(DISTINCT c.environment ORDER BY c.environment)
                 AS environments
          FROM telemetry.client_instances c
          CROSS JOIN LATERAL unnest(coalesce(nullif(c.projects, '{}'), '{*}')) AS p(project)
          WHERE c.app_name = k.app_name GROUP BY p.project) per_project
) u ON true
"""
# $1 the name's substring (case-insensitive, `%` and `_` literal), $2 descending, $3 limit,
# $4 offset; with the count of every match.
LIST = f"""
SELECT * FROM ({_APPLICATIONS}) apps
WHERE strpos(lower(app_name), lower($1)) > 0
ORDER BY CASE WHEN $2 THEN app_name END DESC, app_name
LIMIT $3 OFFSET $4
"""  # noqa: S608 - constants
# How many match $1, whatever the page (a page past the end has a total all the same).
LIST_TOTAL = """
SELECT count(*) FROM (SELECT app_name FROM applications
                      UNION SELECT app_name FROM telemetry.client_instances) known
WHERE strpos(lower(app_name), lower($1)) > 0
"""
ONE = f"SELECT * FROM ({_APPLICATIONS}) apps WHERE app_name = $1"  # noqa: S608 - constants
# Its instances, by environment and id (Unleash gives no IP to us: not stored, see behavior).
INSTANCES = """
SELECT instance_id, sdk_version, environment, first_seen, last_seen
FROM telemetry.client_instances WHERE app_name = $1 ORDER BY environment, instance_id
"""
# The flags the application reported (every hour kept), with what the flag is, when it still
# exists.
SEEN_FLAGS = """
SELECT s.feature_name, f.name IS NOT NULL AS found, f.description, f.type, f.project, f.stale,
       f.created_at, f.impression_data, f.archived_at IS NOT NULL AS archived,
       (SELECT max(l.last_seen_at) FROM telemetry.feature_last_seen l
        WHERE l.feature_name = f.name AND l.last_seen_at >= f.created_at) AS last_seen_at
FROM (SELECT DISTINCT feature_name FROM telemetry.client_metrics_hourly WHERE app_name = $1) s
LEFT JOIN features f ON f.name = s.feature_name
ORDER BY s.feature_name
"""
# The overview: the projects of the flags it reported and how many flags.
OVERVIEW_FLAGS = """
SELECT coalesce(array_agg(DISTINCT f.project ORDER BY f.project)
                FILTER (WHERE f.project IS NOT NULL), '{}') AS projects,
       count(DISTINCT m.feature_name) AS feature_count
FROM telemetry.client_metrics_hourly m LEFT JOIN features f ON f.name = m.feature_name
WHERE m.app_name = $1
"""
# The environments it reported flags in (as Unleash's overview: from the counts), each with
# its instances there: how many, their SDKs, the latest report.
OVERVIEW_ENVIRONMENTS = """
SELECT e.environment, count(c.instance_id) AS instance_count,
       coalesce(array_agg(DISTINCT c.sdk_version ORDER BY c.sdk_version)
                FILTER (WHERE c.sdk_version IS NOT NULL), '{}') AS sdks,
       max(c.last_seen) AS last_seen
FROM (SELECT DISTINCT environment FROM telemetry.client_metrics_hourly WHERE app_name = $1) e
LEFT JOIN telemetry.client_instances c ON c.app_name = $1 AND c.environment = e.environment
GROUP BY e.environment ORDER BY e.environment
"""
# The strategies its instances know that no strategy type has (built-in ones are given).
INSTANCE_STRATEGIES = """
SELECT DISTINCT s.name FROM telemetry.client_instances c
CROSS JOIN LATERAL unnest(c.strategies) AS s(name)
WHERE c.app_name = $1 ORDER BY s.name
"""
CUSTOM_STRATEGY_NAMES = "SELECT name FROM strategy_definitions WHERE name = ANY($1::text[])"
# Its instances heard from in the last 24 hours in one environment, most recent first.
RECENT_INSTANCES = """
SELECT instance_id, sdk_version, last_seen FROM telemetry.client_instances
WHERE app_name = $1 AND environment = $2 AND last_seen >= now() - interval '24 hours'
ORDER BY last_seen DESC, instance_id LIMIT 1000
"""
# Every SDK version with the applications that run it.
APPLICATIONS_BY_SDK = """
SELECT sdk_version, array_agg(DISTINCT app_name ORDER BY app_name) AS applications
FROM telemetry.client_instances WHERE sdk_version IS NOT NULL
GROUP BY sdk_version ORDER BY sdk_version
"""
# A project's applications: those that reported flags of the project, in the environments they
# reported them in, with their instances and SDKs there. $1 project, $2 name substring, $3
# descending, $4 limit, $5 offset.
_PROJECT_APPLICATIONS = """
SELECT m.app_name, array_agg(DISTINCT m.environment ORDER BY m.environment) AS environments
FROM telemetry.client_metrics_hourly m JOIN features f ON f.name = m.feature_name
WHERE f.project = $1 GROUP BY m.app_name
"""
PROJECT_APPLICATIONS = f"""
SELECT p.app_name, p.environments,
       coalesce((SELECT array_agg(DISTINCT c.instance_id ORDER BY c.instance_id)
                 FROM telemetry.client_instances c
                 WHERE c.app_name = p.app_name AND c.environment = ANY(p.environments)),
                '{{}}') AS instances,
       coalesce((SELECT array_agg(DISTINCT c.sdk_version ORDER BY c.sdk_version)
                 FROM telemetry.client_instances c
                 WHERE c.app_name = p.app_name AND c.environment = ANY(p.environments)
                   AND c.sdk_version IS NOT NULL), '{{}}') AS sdks
FROM ({_PROJECT_APPLICATIONS}) p
WHERE strpos(lower(p.app_name), lower($2)) > 0
ORDER BY CASE WHEN $3 THEN p.app_name END DESC, p.app_name
LIMIT $4 OFFSET $5
"""  # noqa: S608 - constants
PROJECT_APPLICATIONS_TOTAL = f"""
SELECT count(*) FROM ({_PROJECT_APPLICATIONS}) p WHERE strpos(lower(p.app_name), lower($2)) > 0
"""  # noqa: S608 - constants
# The SDK versions of the project's applications' instances, with those applications.
PROJECT_APPLICATIONS_BY_SDK = f"""
SELECT c.sdk_version, array_agg(DISTINCT c.app_name ORDER BY c.app_name) AS applications
FROM ({_PROJECT_APPLICATIONS}) p
JOIN telemetry.client_instances c
  ON c.app_name = p.app_name AND c.environment = ANY(p.environments)
WHERE c.sdk_version IS NOT NULL
GROUP BY c.sdk_version ORDER BY c.sdk_version
"""  # noqa: S608 - constants

# --- state of decisions -----------------------------------------------------------------------

# Commands on one application queue on its name's lock (a described application has a row to
# lock, an undescribed one has none, and a deleted one may be described again).
LOCK_NAME = "SELECT pg_advisory_xact_lock(hashtextextended('application/' || $1, 0))"
DESCRIBED = "SELECT description, url, color, icon FROM applications WHERE app_name = $1"
REPORTED = "SELECT EXISTS (SELECT 1 FROM telemetry.client_instances WHERE app_name = $1)"
# Deleting an application takes its instances with it, in the transaction of its event.
DELETE_INSTANCES = "DELETE FROM telemetry.client_instances WHERE app_name = $1"
