"""Read SQL of project insight: the project's flags and their health, and each flag's lead
time to production from the async read model `feature_lead_times` (projections/
lead_times.py)."""

from __future__ import annotations

from projections.feature_types import potentially_stale
from service.http.past import CLOCK

# The project's active flags as the health report lists them, each with whether it is
# potentially stale (older than its type's expected lifetime) and the latest SDK report.
FLAGS = """
SELECT f.name, f.description, f.type, f.project, f.stale, f.created_at, f.impression_data,
       (NOT f.stale AND POTENTIALLY_STALE) AS potentially_stale,
       (SELECT max(l.last_seen_at) FROM telemetry.feature_last_seen l
        WHERE l.feature_name = f.name AND l.last_seen_at >= f.created_at) AS last_seen_at
FROM features f WHERE f.project = $1 AND f.archived_at IS NULL
ORDER BY f.created_at, f.name
""".replace("POTENTIALLY_STALE", potentially_stale("f", CLOCK))
# Each active flag of the project switched on in a production-type environment: its creation
# and its first enabling in one (the log's commit times, exactly).
LEAD_TIMES = """
SELECT f.name, f.created_at, min(x.enabled_at) AS enabled_at
FROM features f
JOIN feature_lead_times x ON x.feature_name = f.name
JOIN environments e ON e.name = x.environment AND e.type = 'production'
WHERE f.project = $1 AND f.archived_at IS NULL
GROUP BY f.name, f.created_at
ORDER BY f.name
"""
