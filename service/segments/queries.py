"""Read SQL of the segments read model."""

from __future__ import annotations

NEXT_ID = "SELECT nextval('segment_ids')::integer"
NAME_TAKEN = "SELECT EXISTS (SELECT 1 FROM segments WHERE name = $1 AND id <> $2)"
# Strategies take FOR SHARE on the segments they reference, deletes take FOR UPDATE:
# a segment cannot vanish under a strategy that is being saved with it.
LOCK_FOR_DELETE = "SELECT name FROM segments WHERE id = $1 FOR UPDATE"
LOCK_EXISTING = "SELECT id FROM segments WHERE id = ANY($1::integer[]) FOR SHARE"
IN_USE = "SELECT count(*) FROM feature_strategies WHERE $1 = ANY(segments)"
SEGMENT_JSON = """
SELECT json_build_object(
    'id', id, 'name', name, 'description', description, 'constraints', constraints,
    'createdAt', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
    'project', NULL)
FROM segments WHERE id = $1
"""
ALL_JSON = """
SELECT coalesce(json_agg(json_build_object(
    'id', id, 'name', name, 'description', description, 'constraints', constraints,
    'createdAt', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
    'project', NULL) ORDER BY id), '[]')
FROM segments
"""
