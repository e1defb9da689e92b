"""The read models the client API's model is loaded from: flags that are not archived, with
what each environment has; segments. `$1`: the flags to read again (NULL: all of them)."""

from __future__ import annotations

FEATURES = """
SELECT name, project, type, description, stale, impression_data FROM features
WHERE archived_at IS NULL AND ($1::text[] IS NULL OR name = ANY($1::text[]))
"""
ENVIRONMENTS = """
SELECT feature_name, environment, enabled, variants::text AS variants FROM feature_environments
WHERE $1::text[] IS NULL OR feature_name = ANY($1::text[])
"""
# Disabled strategies are not evaluated: SDKs never see them.
STRATEGIES = """
SELECT feature_name, environment, id::text AS id, name, sort_order,
       constraints::text AS constraints, parameters::text AS parameters,
       variants::text AS variants, segments
FROM feature_strategies
WHERE NOT disabled AND ($1::text[] IS NULL OR feature_name = ANY($1::text[]))
"""
TAGS = """
SELECT feature_name, type, value FROM feature_tags
WHERE $1::text[] IS NULL OR feature_name = ANY($1::text[])
"""
DEPENDENCIES = """
SELECT child, parent, enabled, variants::text AS variants FROM feature_dependencies
WHERE $1::text[] IS NULL OR child = ANY($1::text[])
ORDER BY child, parent
"""
SEGMENTS = "SELECT id, name, constraints::text AS constraints FROM segments ORDER BY id"
PROJECT_ENVIRONMENTS = "SELECT project_id, environment FROM project_environments"
