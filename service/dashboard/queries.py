"""Read SQL of the personal dashboard."""

from __future__ import annotations

# The person's active favourite flags and the active flags they created, newest first (as
# Unleash: at most 100).
PERSONAL_FLAGS = """
SELECT f.name, f.type, f.project, f.created_at FROM features f
WHERE f.archived_at IS NULL
  AND (EXISTS (SELECT 1 FROM favorite_features ff
               WHERE ff.user_id = $1 AND ff.feature_name = f.name)
       OR EXISTS (SELECT 1 FROM feature_creators c
                  WHERE c.user_id = $1 AND c.feature_name = f.name))
ORDER BY f.created_at DESC, f.name LIMIT 100
"""
# People with the root role Admin (no service accounts), in id order.
ADMINS = """
SELECT id, name, username, email FROM users
WHERE account_type = 'User' AND root_role = 1 ORDER BY id
"""
