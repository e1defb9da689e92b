"""Read SQL of the account read models (users, service accounts, personal access tokens,
sessions): the state decisions need, read under row locks, and the rows responses are built from."""

from __future__ import annotations

from typing import TYPE_CHECKING

from service.users.domain import Account

if TYPE_CHECKING:
    from service.connections import Conn

NEXT_USER_ID = "SELECT nextval('user_ids')"
LIST_USERS = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at
FROM users u WHERE u.account_type = 'User' ORDER BY u.id
"""
GET_USER = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at
FROM users u WHERE u.id = $1 AND u.account_type = 'User'
"""
# Changes to an account lock its row first: they queue, and each sees what the one before left
# (the row's own columns, read by the statement that waited for the lock, are its latest).
LOCK_ACCOUNT = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts
FROM users u WHERE u.id = $1 FOR UPDATE
"""
GET_ACCOUNT = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at
FROM users u WHERE u.id = $1
"""
# Sign-in: what looks like an e-mail is looked up by e-mail (any case), anything else by
# username (as written), as Unleash does; so a username can never shadow someone's e-mail.
SIGN_IN_BY_EMAIL = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at, pw.password_hash
FROM users u LEFT JOIN user_passwords pw ON pw.user_id = u.id
WHERE u.account_type = 'User' AND lower(u.email) = lower($1)
"""
SIGN_IN_BY_USERNAME = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at, pw.password_hash
FROM users u LEFT JOIN user_passwords pw ON pw.user_id = u.id
WHERE u.account_type = 'User' AND u.username = $1
"""
PASSWORD_HASH = "SELECT password_hash FROM user_passwords WHERE user_id = $1"
LOCK_SESSION_OWNER = """
SELECT u.id, coalesce(u.name, u.username, u.email) AS name
FROM sessions s JOIN users u ON u.id = s.user_id
WHERE s.session_hash = $1
FOR UPDATE OF s
"""

# behavior.md section 3: a person (not a service account) who has not signed in since the
# threshold, was created before it, and whose tokens were all unused since it.
INACTIVE_USERS = """
SELECT u.id, u.name, u.email, u.username, u.seen_at, u.created_at,
       (SELECT max(p.seen_at) FROM personal_access_tokens p WHERE p.user_id = u.id) AS pat_seen_at
FROM users u
WHERE u.account_type = 'User'
  AND u.created_at <= $1 AND (u.seen_at IS NULL OR u.seen_at <= $1)
  AND NOT EXISTS (SELECT 1 FROM personal_access_tokens p
                  WHERE p.user_id = u.id AND p.seen_at > $1)
ORDER BY u.id
"""
# The same test on the listed ids, under row locks: a user who signs in meanwhile (the sign-in
# holds the row) is re-checked after it commits and is no longer inactive.
LOCK_INACTIVE = """
SELECT u.id, u.name, u.username, u.email, u.root_role, u.created_at, u.seen_at
FROM users u
WHERE u.id = ANY($2::bigint[]) AND u.id <> $3
  AND u.account_type = 'User'
  AND u.created_at <= $1 AND (u.seen_at IS NULL OR u.seen_at <= $1)
  AND NOT EXISTS (SELECT 1 FROM personal_access_tokens p
                  WHERE p.user_id = u.id AND p.seen_at > $1)
ORDER BY u.id
FOR UPDATE OF u
"""
# behavior.md section 5: exact matches, then prefixes, then other substrings; ties by name, then
# id. How the three are found is explained in service/users/search.py. The first statement
# takes the query as sent (trimmed) as $1 and $2: PostgreSQL lower-cases it (NEEDLE), as it did
# the stored fields (Python's lower() differs for some letters: final sigma, dotted I), and
# escapes \\, % and _ for LIKE (PATTERN); it returns that pattern, which the others take as $1.
# $3 (first statement) or $2 (the others): the rows wanted (offset + limit); then as noted.
_NEEDLE = "lower($1)"
_PATTERN = r"""replace(replace(replace(lower($2), '\', '\\'), '%', '\%'), '_', '\_')"""


def _lowered(sql: str) -> str:
    return sql.replace("NEEDLE", _NEEDLE).replace("PATTERN", _PATTERN)


_REST_MATCH = """
(w.search_name LIKE '%' || PATTERN || '%' OR w.search_username LIKE '%' || PATTERN || '%'
 OR w.search_email LIKE '%' || PATTERN || '%')
AND NOT coalesce(w.search_name LIKE PATTERN || '%' OR w.search_username LIKE PATTERN || '%'
                 OR w.search_email LIKE PATTERN || '%', false)
"""
# Exact matches, prefix matches (not exact), and, unless those fill the page, the third tier
# among the first $4 people by name (with how many people that was, and the table's estimated
# size). $5 and $6: what the three-character group keys of the prefixes are (_first).
_SEARCH_FIRST = """
WITH exact AS (
    SELECT u.id, u.name FROM users u
    WHERE u.account_type = 'User'
      AND (u.search_name COLLATE "C" = NEEDLE OR u.search_username COLLATE "C" = NEEDLE
           OR u.search_email COLLATE "C" = NEEDLE)
    ORDER BY u.name || '', u.id LIMIT $3
), prefix AS (
    SELECT p.id FROM (
        (SELECT u.id, u.name FROM users u
         WHERE u.account_type = 'User' AND PREFIX(search_name)
         ORDER BY u.name, u.id LIMIT $3)
        UNION
        (SELECT u.id, u.name FROM users u
         WHERE u.account_type = 'User' AND u.search_username IS NOT NULL
           AND PREFIX(search_username)
         ORDER BY u.name, u.id LIMIT $3)
        UNION
        (SELECT u.id, u.name FROM users u
         WHERE u.account_type = 'User' AND u.search_email IS NOT NULL
           AND PREFIX(search_email)
         ORDER BY u.name, u.id LIMIT $3)
    ) p
    WHERE p.id NOT IN (SELECT e.id FROM exact e)
    ORDER BY p.name, p.id LIMIT $3
), head AS (
    SELECT count(*) AS walked,
           (array_agg(w.id ORDER BY w.name, w.id) FILTER (WHERE REST_MATCH))[1:$3] AS ids
    FROM (SELECT u.id, u.name, u.search_name, u.search_username, u.search_email FROM users u
          WHERE u.account_type = 'User' ORDER BY u.name, u.id
          LIMIT CASE WHEN (SELECT count(*) FROM exact) + (SELECT count(*) FROM prefix) >= $3
                     THEN 0 ELSE $4 END) w
)
SELECT PATTERN AS pattern,
       array(SELECT e.id FROM exact e ORDER BY e.name || '', e.id) AS exact,
       array(SELECT p.id FROM prefix p) AS prefix,
       coalesce(h.ids, '{}') AS rest, h.walked,
       (SELECT c.reltuples FROM pg_class c WHERE c.oid = 'users'::regclass)::bigint AS users
FROM head h
""".replace("REST_MATCH", _REST_MATCH)


def _first(prefix: str) -> str:
    """_SEARCH_FIRST with the prefix condition on each field (`F` stands for the field)."""
    out = _SEARCH_FIRST
    for field in ("search_name", "search_username", "search_email"):
        out = out.replace(f"PREFIX({field})", prefix.replace("F", f"u.{field}"))
    return _lowered(out)


# Three characters: the prefixes are one group, in name order ($5 the query; $6 unused).
SEARCH_FIRST_THREE = _first(
    """substr(F, 1, 3) COLLATE "C" = substr(lower($5), 1, 3) AND $6::text IS NOT NULL"""
)
# More: one group, and in it those that go on like the query. (When few go on, PostgreSQL may
# prefer the equality index's range and a sort; both are quick.)
SEARCH_FIRST_LONG = _first("""substr(F, 1, 3) COLLATE "C" = substr(lower($5), 1, 3)
           AND F LIKE PATTERN || '%' AND $6::text IS NOT NULL""")
# Two characters: a range of groups (the query, and it followed by any one character).
SEARCH_FIRST_SHORT = _first("""substr(F, 1, 3) COLLATE "C" BETWEEN lower($5) AND lower($6)
           AND F LIKE PATTERN || '%'""")
# The third tier by walking people in name order, at most $3 of them (NULL: everyone).
SEARCH_REST_WALK = """
SELECT w.id FROM (SELECT u.id, u.name, u.search_name, u.search_username, u.search_email
                  FROM users u WHERE u.account_type = 'User' ORDER BY u.name, u.id LIMIT $3) w
WHERE REST_MATCH
ORDER BY w.name, w.id LIMIT $2
""".replace("REST_MATCH", _REST_MATCH.replace("PATTERN", "$1"))
# The third tier from the trigram indexes: every match, sorted (`name || ''` keeps the planner
# from walking the name order instead, which it may think cheaper and is not when few match).
# $3 false when no e-mail can match (the query holds a space): the plan then leaves the e-mail
# index out, which matters when a piece of the query is in everyone's e-mail domain.
SEARCH_REST_INDEXED = """
SELECT w.id FROM users w
WHERE w.account_type = 'User'
  AND (w.search_name LIKE '%' || $1 || '%' OR w.search_username LIKE '%' || $1 || '%'
       OR ($3::boolean AND w.search_email LIKE '%' || $1 || '%'))
  AND NOT coalesce(w.search_name LIKE $1 || '%' OR w.search_username LIKE $1 || '%'
                   OR w.search_email LIKE $1 || '%', false)
ORDER BY w.name || '', w.id LIMIT $2
"""
SEARCH_ROWS = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts,
       u.seen_at, u.created_at
FROM users u WHERE u.id = ANY($1::bigint[])
"""

USERNAME_TAKEN = "SELECT EXISTS (SELECT 1 FROM users WHERE username = $1)"
NEXT_PAT_ID = "SELECT nextval('personal_access_token_ids')"
PAT_DESCRIPTIONS = "SELECT description FROM personal_access_tokens WHERE user_id = $1"
LOCK_PAT = "SELECT id FROM personal_access_tokens WHERE id = $1 AND user_id = $2 FOR UPDATE"
_PAT_COLUMNS = (
    "p.id, p.secret_hint, p.created_at, p.seen_at, p.user_id, p.description, p.expires_at"
)
PAT = f"SELECT {_PAT_COLUMNS} FROM personal_access_tokens p WHERE p.id = $1"  # noqa: S608
OWN_PATS = f"SELECT {_PAT_COLUMNS} FROM personal_access_tokens p WHERE p.user_id = $1 ORDER BY p.id"  # noqa: S608
# One round trip answers both: no row when the id is not a service account's, one row with
# NULL columns when it has no token, else its tokens in id order.
SERVICE_ACCOUNT_PATS = f"""
SELECT {_PAT_COLUMNS}
FROM users u LEFT JOIN personal_access_tokens p ON p.user_id = u.id
WHERE u.id = $1 AND u.account_type = 'Service Account'
ORDER BY p.id
"""  # noqa: S608 - constants
LIST_SERVICE_ACCOUNTS = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at
FROM users u WHERE u.account_type = 'Service Account'
ORDER BY u.id
"""
GET_SERVICE_ACCOUNT = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at
FROM users u WHERE u.id = $1 AND u.account_type = 'Service Account'
"""


async def lock_account(conn: Conn, account_id: int) -> Account | None:
    row = await conn.fetchrow(LOCK_ACCOUNT, account_id)
    if row is None:
        return None
    return Account(
        id=row["id"],
        account_type=row["account_type"],
        name=row["name"],
        username=row["username"],
        email=row["email"],
        root_role=row["root_role"],
        login_attempts=row["login_attempts"],
    )
