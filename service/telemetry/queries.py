"""SQL on schema `telemetry` (sql/0015): what register and metrics write, each one statement
(one round trip, however many flags a report counts)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from service.telemetry.commands import instant

if TYPE_CHECKING:
    from eventlog.connections import Conn
    from service.telemetry.commands import RegisterClientMetrics

_encode = msgspec.json.Encoder().encode

# Counts add up; a sum past the largest bigint stays there instead of failing the request.
_SATURATED = "least(h.{0}::numeric + excluded.{0}, 9223372036854775807)::bigint"
# Two variant maps added key by key (most reports have none, or the row had none yet).
_VARIANTS_ADDED = """
CASE WHEN excluded.variants = '{}' THEN h.variants
     WHEN h.variants = '{}' THEN excluded.variants
     ELSE (SELECT jsonb_object_agg(key, least(total, 9223372036854775807))
           FROM (SELECT key, sum(value::numeric) AS total
                 FROM (SELECT * FROM jsonb_each_text(h.variants)
                       UNION ALL SELECT * FROM jsonb_each_text(excluded.variants)) each_variant
                 GROUP BY key) summed)
END
"""

# $1 environment, $2 app, $3 instance, $4 the hour; $5..$8 one array element per flag that
# was evaluated (yes + no > 0): name, yes, no, variants (JSON). As in Unleash, flags that do
# not exist (archived ones do) count nowhere, and the flags seen get their lastSeenAt. Rows are
# written in name order, so concurrent reports lock shared rows in one order (no deadlock).
RECORD_METRICS = f"""
WITH counted AS (
    INSERT INTO telemetry.client_metrics_hourly AS h
        (feature_name, environment, app_name, hour, yes, no, variants, updated_at)
    SELECT t.name, $1, $2, $4, t.yes, t.no, t.variants::jsonb, now()
    FROM unnest($5::text[], $6::bigint[], $7::bigint[], $8::text[]) AS t(name, yes, no, variants)
    WHERE EXISTS (SELECT 1 FROM features f WHERE f.name = t.name)
    ORDER BY t.name
    ON CONFLICT ON CONSTRAINT client_metrics_hourly_pkey DO UPDATE SET
        yes = {_SATURATED.format("yes")},
        no = {_SATURATED.format("no")},
        variants = {_VARIANTS_ADDED},
        updated_at = excluded.updated_at
    RETURNING feature_name
), seen AS (
    INSERT INTO telemetry.feature_last_seen AS l (feature_name, environment, last_seen_at)
    SELECT feature_name, $1, now() FROM counted ORDER BY feature_name
    ON CONFLICT ON CONSTRAINT feature_last_seen_pkey DO UPDATE
        SET last_seen_at = greatest(l.last_seen_at, excluded.last_seen_at)
)
INSERT INTO telemetry.client_instances AS i
    (app_name, instance_id, environment, first_seen, last_seen)
VALUES ($2, $3, $1, now(), now())
ON CONFLICT ON CONSTRAINT client_instances_pkey DO UPDATE SET last_seen = excluded.last_seen
"""  # noqa: S608 - constants

# $1 app, $2 instance, $3 environment, then what the SDK says of itself ($4..$13), and $14 the
# token's projects. A registration again replaces what the last one said.
REGISTER_INSTANCE = """
INSERT INTO telemetry.client_instances AS i
    (app_name, instance_id, environment, sdk_version, sdk_flavor, sdk_flavor_version,
     platform_name, platform_version, yggdrasil_version, spec_version, strategies,
     metrics_interval, started, projects, registered_at, first_seen, last_seen)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, now(), now(), now())
ON CONFLICT ON CONSTRAINT client_instances_pkey DO UPDATE SET
    sdk_version = excluded.sdk_version,
    sdk_flavor = excluded.sdk_flavor,
    sdk_flavor_version = excluded.sdk_flavor_version,
    platform_name = excluded.platform_name,
    platform_version = excluded.platform_version,
    yggdrasil_version = excluded.yggdrasil_version,
    spec_version = excluded.spec_version,
    strategies = excluded.strategies,
    metrics_interval = excluded.metrics_interval,
    started = excluded.started,
    projects = excluded.projects,
    registered_at = excluded.registered_at,
    last_seen = excluded.last_seen
"""


async def record_metrics(conn: Conn, environment: str, cmd: RegisterClientMetrics) -> None:
    """One report (RECORD_METRICS): each flag evaluated (yes + no > 0) counted in the UTC hour
    of the bucket's stop, in `environment`; the instance seen."""
    toggles = cmd.bucket.toggles if cmd.bucket else {}
    counted = [(name, c) for name, c in toggles.items() if c.yes + c.no > 0]
    hour = None
    if cmd.bucket is not None:
        hour = instant(cmd.bucket.stop).replace(minute=0, second=0, microsecond=0)
    await conn.execute(
        RECORD_METRICS,
        environment,
        cmd.app_name,
        cmd.instance,
        hour,
        [name for name, _ in counted],
        [c.yes for _, c in counted],
        [c.no for _, c in counted],
        [_encode(c.variants or {}).decode() for _, c in counted],
    )
