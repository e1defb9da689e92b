"""Read SQL of the project and environment read models: the state decisions need (under row
locks) and the rows responses are built from."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projections.feature_types import potentially_stale
from projections.flag_extras import current_stage
from service.http.past import CLOCK
from service.projects.domain import ActiveProject

if TYPE_CHECKING:
    import asyncpg

    from eventlog.connections import Conn

PROJECT = """
SELECT p.id, p.name, p.description, p.created_at, p.archived_at,
       (SELECT count(*) FROM features f
        WHERE f.project = p.id AND f.archived_at IS NULL) AS feature_count
FROM projects p WHERE p.id = $1
"""
PROJECT_EXISTS = "SELECT EXISTS (SELECT 1 FROM projects WHERE id = $1)"
# Changes to a project lock its row: they queue. Flag creates share-lock it, so an archive
# waits for them. The state is read by the next statement, which sees what they committed.
LOCK_ACTIVE_PROJECT = "SELECT 1 FROM projects WHERE id = $1 AND archived_at IS NULL FOR UPDATE"
PROJECT_STATE = """
SELECT array(SELECT pe.environment FROM project_environments pe
             WHERE pe.project_id = $1 ORDER BY pe.environment) AS environments,
       (SELECT count(*) FROM features f
        WHERE f.project = $1 AND f.archived_at IS NULL) AS active_flags
"""
PROJECT_ENVIRONMENTS = """
SELECT e.name, e.type, e.sort_order, pe.default_strategy
FROM project_environments pe JOIN environments e ON e.name = pe.environment
WHERE pe.project_id = $1 ORDER BY e.sort_order, e.name
"""
ENVIRONMENT_NAMES = "SELECT name FROM environments ORDER BY sort_order, name"
ENVIRONMENT_EXISTS = "SELECT EXISTS (SELECT 1 FROM environments WHERE name = $1)"
NEXT_SORT_ORDER = "SELECT coalesce(max(sort_order), 0) + 1 FROM environments"
LIST_ENVIRONMENTS = """
SELECT e.name, e.type, e.sort_order, e.enabled,
       (SELECT count(*) FROM project_environments pe JOIN projects p ON p.id = pe.project_id
        WHERE pe.environment = e.name AND p.archived_at IS NULL) AS project_count,
       (SELECT count(*) FROM api_tokens t WHERE t.environment = e.name) AS api_token_count,
       (SELECT count(*) FROM feature_environments fe
        WHERE fe.environment = e.name AND fe.enabled) AS enabled_toggle_count
FROM environments e ORDER BY e.sort_order, e.name
"""
ENVIRONMENT = """
SELECT e.name, e.type, e.sort_order, e.enabled, 0::bigint AS project_count FROM environments e
WHERE e.name = $1
"""
# Every environment as a project's settings show it ($1 the project, which need not exist, as
# in Unleash): the API tokens for it that reach the project (its own and those of every
# project, as Unleash counts them), its flags switched on there, and whether the project has it
# (`visible`).
PROJECT_ENVIRONMENTS_FOR_UI = """
SELECT e.name, e.type, e.sort_order, e.enabled,
       (SELECT count(*) FROM api_tokens t
        WHERE t.environment = e.name AND ($1 = ANY(t.projects) OR '*' = ANY(t.projects)))
           AS project_api_token_count,
       (SELECT count(*) FROM feature_environments fe JOIN features f ON f.name = fe.feature_name
        WHERE fe.environment = e.name AND fe.enabled AND f.project = $1)
           AS project_enabled_toggle_count,
       EXISTS (SELECT 1 FROM project_environments pe
               WHERE pe.project_id = $1 AND pe.environment = e.name) AS visible
FROM environments e ORDER BY e.sort_order, e.name
"""
# An environment's state as switching it decides on, its row locked (NULL: none such).
LOCK_ENVIRONMENT = "SELECT enabled FROM environments WHERE name = $1 FOR UPDATE"
LOCK_ENVIRONMENT_SETTINGS = "SELECT type, sort_order FROM environments WHERE name = $1 FOR UPDATE"
# The environments a new order names, locked in name order (two reorders queue, no deadlock).
LOCK_SORT_ORDERS = """
SELECT name, sort_order FROM environments WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE
"""


async def lock_active_project(conn: Conn, project_id: str) -> ActiveProject | None:
    """Lock the project's row, then read its state (after the lock: docs/architecture.md)."""
    if await conn.fetchval(LOCK_ACTIVE_PROJECT, project_id) is None:
        return None
    row = await conn.fetchrow(PROJECT_STATE, project_id)
    assert row is not None  # a SELECT without FROM has its one row
    return ActiveProject(environments=list(row["environments"]), active_flags=row["active_flags"])


async def environment_names(conn: Conn) -> list[str]:
    return [r["name"] for r in await conn.fetch(ENVIRONMENT_NAMES)]


async def active_project(
    conn: Conn, project_id: str
) -> tuple[asyncpg.Record, list[asyncpg.Record]] | None:
    """A project that is not archived, and its environments in display order."""
    row = await conn.fetchrow(PROJECT, project_id)
    if row is None or row["archived_at"] is not None:
        return None
    return row, await conn.fetch(PROJECT_ENVIRONMENTS, project_id)


# --- the projects list, a project's overview and status, as Unleash's UI reads them ---------

# Every active project with what its card shows; $1 the caller's account id (null: no person,
# no favourites). lastUpdatedAt: its latest event, from the async read model of the projects'
# activity, named with its schema: a past state (`?at=`, whose read models are the inline
# ones rebuilt) shows the latest known, as it shows the latest SDK report
# (lastReportedFlagUsage, from telemetry).
PROJECTS_FOR_UI = """
SELECT p.id, p.name, p.description, p.created_at, p.archived_at,
       c.active_flags AS feature_count, c.stale_flags, c.potentially_stale_flags,
       (SELECT max(a.last_at) FROM readmodel.project_activity_daily a
        WHERE a.project_id = p.id) AS last_updated_at,
       (SELECT max(l.last_seen_at) FROM features f
        JOIN telemetry.feature_last_seen l
          ON l.feature_name = f.name AND l.last_seen_at >= f.created_at
        WHERE f.project = p.id) AS last_reported_flag_usage,
       EXISTS (SELECT 1 FROM favorite_projects fp
               WHERE fp.user_id = $1 AND fp.project_id = p.id) AS favorite
FROM projects p
CROSS JOIN LATERAL (
    SELECT count(*) AS active_flags, count(*) FILTER (WHERE f.stale) AS stale_flags,
           count(*) FILTER (WHERE NOT f.stale AND POTENTIALLY_STALE) AS potentially_stale_flags
    FROM features f WHERE f.project = p.id AND f.archived_at IS NULL
) c
WHERE p.archived_at IS NULL ORDER BY p.created_at, p.id
""".replace("POTENTIALLY_STALE", potentially_stale("f", CLOCK))
# One project (archived ones too: $2 the caller's account id, as above).
PROJECT_FOR_UI = PROJECTS_FOR_UI.replace(
    "WHERE p.archived_at IS NULL ORDER BY p.created_at, p.id", "WHERE p.id = $2"
)
FEATURE_TYPE_COUNTS = """
SELECT type, count(*) AS count FROM features WHERE project = $1 AND archived_at IS NULL
GROUP BY type ORDER BY type
"""
# Flags created and archived in the last 30 days and in the 30 before, and the events of both.
PROJECT_STATS = """
SELECT count(*) FILTER (WHERE f.created_at >= now() - interval '30 days') AS created_current,
       count(*) FILTER (WHERE f.created_at >= now() - interval '60 days'
                          AND f.created_at < now() - interval '30 days') AS created_past,
       count(*) FILTER (WHERE f.archived_at >= now() - interval '30 days') AS archived_current,
       count(*) FILTER (WHERE f.archived_at >= now() - interval '60 days'
                          AND f.archived_at < now() - interval '30 days') AS archived_past,
       (SELECT coalesce(sum(a.events), 0) FROM project_activity_daily a
        WHERE a.project_id = $1 AND a.day > (now() AT TIME ZONE 'UTC')::date - 30)
           AS activity_current,
       (SELECT coalesce(sum(a.events), 0) FROM project_activity_daily a
        WHERE a.project_id = $1 AND a.day <= (now() AT TIME ZONE 'UTC')::date - 30
          AND a.day > (now() AT TIME ZONE 'UTC')::date - 60) AS activity_past
FROM features f WHERE f.project = $1
"""
# A project's first active flag (in creation order) and whether an SDK reported any of its
# flags: Unleash's onboarding status.
ONBOARDING = """
SELECT (SELECT f.name FROM features f WHERE f.project = $1 AND f.archived_at IS NULL
        ORDER BY f.created_at, f.name LIMIT 1) AS first_flag,
       EXISTS (SELECT 1 FROM features f JOIN telemetry.feature_last_seen l
               ON l.feature_name = f.name AND l.last_seen_at >= f.created_at
               WHERE f.project = $1) AS onboarded
"""
ACTIVITY_BY_DATE = """
SELECT day, events FROM project_activity_daily
WHERE project_id = $1 AND day >= ((now() AT TIME ZONE 'UTC') - interval '1 year')::date
ORDER BY day
"""
# The project's flags by lifecycle stage now (projections/flag_extras.py).
LIFECYCLE_COUNTS = f"""
SELECT count(*) FILTER (WHERE stage = 'initial') AS initial,
       count(*) FILTER (WHERE stage = 'pre-live') AS pre_live,
       count(*) FILTER (WHERE stage = 'live') AS live,
       count(*) FILTER (WHERE stage = 'completed') AS completed,
       count(*) FILTER (WHERE stage = 'archived') AS archived,
       count(*) FILTER (WHERE archived_at >= now() - interval '30 days') AS archived_30_days
FROM (SELECT f.archived_at, {current_stage("f")} AS stage FROM features f WHERE f.project = $1) s
"""  # noqa: S608 - constants
# API tokens given this project by name (as Unleash counts them: not those of every project).
PROJECT_API_TOKENS = "SELECT count(*) FROM api_tokens WHERE $1 = ANY(projects)"
# The distinct creators of the project's active flags, in id order, each under the name their
# account has now (its name, else username, else e-mail; Unleash's fixed names for an API
# token and the system); creators whose account is gone are left out, as in Unleash.
FLAG_CREATORS = """
SELECT DISTINCT ON (c.user_id) c.user_id,
       CASE c.user_id WHEN -42 THEN 'Unleash Admin Token User' WHEN -1337 THEN 'Unleash System'
            ELSE coalesce(u.name, u.username, u.email) END AS name
FROM features f JOIN feature_creators c ON c.feature_name = f.name
LEFT JOIN users u ON u.id = c.user_id
WHERE f.project = $1 AND f.archived_at IS NULL
  AND (c.user_id IN (-42, -1337) OR coalesce(u.name, u.username, u.email) IS NOT NULL)
ORDER BY c.user_id
"""
