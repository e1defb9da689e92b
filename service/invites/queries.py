"""Read SQL of the invite-link read models. A link is named by its secret (public routes) or,
on the admin routes, also by the secret's hash, which is what the list shows."""

from __future__ import annotations

NEXT_LINK_ID = "SELECT nextval('invite_link_ids')"
# Who made a link: a person by their account's name (gone with the account), a token by its.
_LINK = """
SELECT l.id, l.secret_hash, l.secret_hint, l.name, l.root_role, l.enabled, l.created_at,
       l.expires_at,
       coalesce(l.created_by_name, u.username, u.email, u.name) AS created_by
FROM invite_links l LEFT JOIN users u ON u.id = l.created_by_id
"""
LIST_LINKS = _LINK + "ORDER BY l.id"
GET_LINK = _LINK + "WHERE l.secret_hash = $1 OR l.secret_hash = $2"
GET_LINK_BY_ID = _LINK + "WHERE l.id = $1"
# The people who signed up through the links given (by id), as the user list shows them.
LINK_USERS = """
SELECT lu.link_id, u.id, u.account_type, u.name, u.username, u.email, u.root_role,
       u.login_attempts, u.seen_at, u.created_at
FROM invite_link_users lu JOIN users u ON u.id = lu.user_id
WHERE lu.link_id = ANY($1::bigint[]) ORDER BY lu.link_id, u.id
"""
# Changes to a link lock its row first: they queue, and each sees what the one before left.
LOCK_LINK = """
SELECT id, root_role, enabled, expires_at FROM invite_links
WHERE secret_hash = $1 OR secret_hash = $2 FOR UPDATE
"""
# A sign-up shares the row: many people may sign up through one link at once, while a change
# to the link waits for them (and they for it).
SHARE_LINK = """
SELECT id, root_role, enabled, expires_at FROM invite_links WHERE secret_hash = $1 FOR SHARE
"""
VALID_LINK = """
SELECT EXISTS (SELECT 1 FROM invite_links
               WHERE secret_hash = $1 AND enabled AND expires_at > now())
"""
