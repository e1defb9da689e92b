"""Read SQL of the api-token read model."""

from __future__ import annotations

NEXT_TOKEN_ID = "SELECT nextval('api_token_ids')"
KNOWN_SCOPES = """
SELECT array(SELECT name FROM environments) AS environments,
       array(SELECT id FROM projects WHERE archived_at IS NULL) AS projects
"""
_TOKEN = """
SELECT id, secret_hint, token_name, type, environment, projects, created_at, expires_at,
       seen_at
FROM api_tokens
"""
LIST_TOKENS = _TOKEN + "ORDER BY id"
GET_TOKEN = _TOKEN + "WHERE id = $1"
TOKEN_WITH_HASH = "SELECT id FROM api_tokens WHERE secret_hash = $1"
ANY_ADMIN_TOKEN = """
SELECT EXISTS (SELECT 1 FROM api_tokens
               WHERE type = 'admin' AND (expires_at IS NULL OR expires_at > now()))
"""
# The row lock makes concurrent deletes queue: the first deletes, the rest find nothing.
LOCK_TOKEN = "SELECT id, token_name FROM api_tokens WHERE id = $1 FOR UPDATE"
LOCK_TOKEN_BY_HASH = "SELECT id, token_name FROM api_tokens WHERE secret_hash = $1 FOR UPDATE"
BY_NAME = _TOKEN + "WHERE token_name = $1 ORDER BY id"
# A project's tokens: the client and frontend tokens that name it (not those of every project).
OF_PROJECT = _TOKEN + "WHERE type <> 'admin' AND $1 = ANY(projects) ORDER BY id"
LOCK_PROJECT_TOKEN = """
SELECT id, token_name, projects FROM api_tokens
WHERE secret_hash = $1 AND type <> 'admin' FOR UPDATE
"""
PROJECT_EXISTS = "SELECT EXISTS (SELECT 1 FROM projects WHERE id = $1 AND archived_at IS NULL)"
LOCK_TOKENS_BY_HINT = "SELECT id FROM api_tokens WHERE secret_hint = $1 FOR UPDATE"
LOCK_PROJECT_TOKEN_BY_ID = """
SELECT id, token_name, projects FROM api_tokens WHERE id = $1 AND type <> 'admin' FOR UPDATE
"""
