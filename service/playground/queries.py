"""The strategies the playground explains: every strategy of the environment's flags that are
not archived, off ones too, in the order SDKs evaluate them. `$1`: the environment; `$2`: the
projects (NULL: all)."""

from __future__ import annotations

STRATEGIES = """
SELECT s.feature_name, s.id::text AS id, s.name, s.title, s.disabled,
       s.constraints::text AS constraints, s.parameters::text AS parameters,
       s.variants::text AS variants, s.segments
FROM feature_strategies s JOIN features f ON f.name = s.feature_name
WHERE s.environment = $1 AND f.archived_at IS NULL
  AND ($2::text[] IS NULL OR f.project = ANY($2::text[]))
ORDER BY s.feature_name, s.sort_order, s.id
"""
